"""What a real node is made of on disk: its folders, and the configuration of its containerd, the
pod bridge's CNI plugins, its kubelet and the cluster's DNS (files only; realnodes.py starts them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.nodeimage.images import pause_image

from . import host, paths

CLUSTER_DOMAIN = "cluster.local"


CRI_NAMESPACE = "k8s.io"
# A real node registers itself with this label: what has a kubelet to read metrics from (kwok nodes do not).
REAL_NODE_LABEL = "node.tfk8s.local/kubelet"
REAL_NODE_LABEL_VALUE = "real"


@dataclass(frozen=True)
class NodeDir:
    """Everything one real node writes."""

    root: Path

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def containerd_root(self) -> Path:
        """Its images and snapshots: kept between runs (image_store.py)."""
        return self.root / "containerd" / "root"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    @property
    def kubelet_serving_cert(self) -> Path:
        return self.root / "kubelet-serving.crt"

    @property
    def kubelet_serving_key(self) -> Path:
        return self.root / "kubelet-serving.key"


def nodes_dir(where: paths.ClusterDir) -> Path:
    return where.root / "nodes"


def cni_dir(where: paths.ClusterDir) -> Path:
    return where.root / "cni"


def cgroup_name(node: str) -> str:
    return f"tfk8s-{node}"


def containerd_config(node: NodeDir, where: paths.ClusterDir) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{node.containerd_root}"
state = "{node.root / "containerd" / "state"}"

[grpc]
  address = "{node.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{node.root / "containerd" / "opt"}"

[{cri}]
  sandbox_image = "{pause_image().reference}"
  # Root here lacks CAP_SYS_RESOURCE: runc may only raise a container's OOM score.
  restrict_oom_score_adj = true
  disable_apparmor = true
  # Pod network namespaces under this node's state, not the host's /var/run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{node.root / "runc"}"

[{cri}.cni]
  bin_dir = "{paths.CNI_PLUGIN_DIR}"
  conf_dir = "{cni_dir(where) / "net.d"}"
"""


def cni_config(where: paths.ClusterDir) -> dict:
    first, last = host.POD_RANGE
    return {
        "cniVersion": "0.4.0",
        "name": "tfk8s",
        "plugins": [
            {
                "type": "bridge",
                "bridge": host.BRIDGE,
                # No default route in the pods and no NAT: nothing leaves the machine.
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(host.SUBNET), "rangeStart": first, "rangeEnd": last}]],
                    "dataDir": str(cni_dir(where) / "ipam"),
                },
            }
        ],
    }


def kubelet_config(node: NodeDir, address: str, ca_file: Path, healthz_port: int) -> dict:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": address,
        "port": 10250,
        "readOnlyPort": 0,
        # From the cluster's CA, for the node's address: metrics-server checks it against that CA
        # (a kubelet left to itself serves a certificate it signed itself, which nothing can check).
        "tlsCertFile": str(node.kubelet_serving_cert),
        "tlsPrivateKeyFile": str(node.kubelet_serving_key),
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        # Each kubelet removes pod cgroups it does not know under its root: one root each.
        "cgroupRoot": f"/{cgroup_name(Path(node.root).name)}",
        # This machine runs cgroup v1 (hybrid) and has no swap accounting set up.
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [host.GATEWAY],
        # No host search domains or name servers leak into the pods.
        "resolvConf": "",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca_file)},
        },
        # Every client certificate of this CA may use the kubelet's API; those meant for it are the API
        # server's and metrics-server's. All are the local cluster's own, under its folder.
        "authorization": {"mode": "AlwaysAllow"},
        "podLogsDir": str(node.root / "pod-logs"),
        "volumePluginDir": str(node.root / "volume-plugins"),
        "serializeImagePulls": False,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "staticPodPath": "",
        "registerNode": True,
    }


def kubeconfig_for(server: str, ca_file: Path, cert: Path, key: Path, user: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tfk8s-local", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "tfk8s-local", "context": {"cluster": "tfk8s-local", "user": user}}],
        "current-context": "tfk8s-local",
    }


def corefile(kubeconfig: Path) -> str:
    return f"""{CLUSTER_DOMAIN}:53 {{
    bind {host.GATEWAY}
    errors
    kubernetes {CLUSTER_DOMAIN} {{
        kubeconfig {kubeconfig} tfk8s-local
        ttl 5
    }}
}}
"""
