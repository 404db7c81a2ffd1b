"""Developer tools of tfk8s: the local control plane and its toolchain."""
