"""`make cluster-user`: bad input and a cluster that is not there are one line, never a traceback;
the bindings are the documented ones (the local control plane's tests use the user they mint)."""

from __future__ import annotations

import pytest
import yaml

from tools.localcluster import paths
from tools.localcluster.users import UserError, bindings, cluster_roles, mint_user


def test_names_that_are_no_dns_label_are_refused(tmp_path):
    with pytest.raises(UserError, match="NAME 'Alice_X' must be a DNS label"):
        mint_user("Alice_X", "ml-team", where=paths.ClusterDir(tmp_path))
    with pytest.raises(UserError, match="NAMESPACE 'ML' must be a DNS label"):
        mint_user("alice", "ML", where=paths.ClusterDir(tmp_path))


def test_without_a_running_cluster_it_says_so(tmp_path):
    where = paths.ClusterDir(tmp_path)
    with pytest.raises(UserError, match="no local cluster runs"):
        mint_user("alice", "ml-team", where=where)
    where.kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    with pytest.raises(UserError, match=r"no local cluster answers at https://127.0.0.1:9: `make cluster-up` first"):
        mint_user("alice", "ml-team", where=where)


def test_the_roles_are_docs_rbac_and_the_node_labeller_is_bound_only_when_asked():
    assert {role["metadata"]["name"] for role in cluster_roles()} == {"tfk8s-experimenter", "tfk8s-node-labeller"}
    assert [b["kind"] for b in bindings("alice", "ml-team", label_nodes=False)] == ["RoleBinding"]
    role_binding, cluster_binding = bindings("alice", "ml-team", label_nodes=True)
    assert (role_binding["metadata"]["namespace"], role_binding["roleRef"]["name"]) == ("ml-team", "tfk8s-experimenter")
    assert (cluster_binding["kind"], cluster_binding["roleRef"]["name"]) == ("ClusterRoleBinding", "tfk8s-node-labeller")
