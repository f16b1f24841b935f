"""Image cache: local builds (debootstrap), downloads, imports and the cache layout."""
