"""Reaching a cluster: the kubeconfig files kubectl would read, merged as it merges them, checked
before the Kubernetes client reads them; what live/ and resources/ both use."""
