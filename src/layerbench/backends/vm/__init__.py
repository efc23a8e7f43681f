"""The VM backend: a QEMU guest booted from a local image, here or on an ssh: host."""
