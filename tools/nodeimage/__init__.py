"""Images for the local cluster's real nodes, built here because no registry is reachable."""
