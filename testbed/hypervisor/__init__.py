"""libvirt side of a lab: connections, XML, overlays, leases, labs and the reaper."""
