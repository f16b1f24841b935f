"""Image cache: local builds (debootstrap recipes, built with mmdebstrap), downloads, imports and the cache layout."""
