"""A local Kubernetes control plane for checking tfk8s's objects for real.

kube-apiserver, kube-controller-manager, kube-scheduler and etcd, built from
the Go module proxy (tools/toolchain), plus kwok for the nodes: no kubelet and
no containers, but real admission, real scheduling and real controllers.
Everything it writes stays under `.cluster/`; it listens on 127.0.0.1 only.
"""
