#!/usr/bin/env bash
# Builds the local cluster's binaries into .tools/bin from the Go module proxy only:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kubelet
# (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3), kwok (sigs.k8s.io/kwok),
# CoreDNS (github.com/coredns/coredns), metrics-server (sigs.k8s.io/metrics-server), the
# NetworkPolicy agent (sigs.k8s.io/kube-network-policies, patched), the
# JobSet and Kueue controllers and their CRDs (sigs.k8s.io/jobset, sigs.k8s.io/kueue), the
# Pulumi CLI and its Kubernetes provider (github.com/pulumi/pulumi/pkg/v3,
# .../pulumi-kubernetes/provider/v4), Kubeflow's training operator (TFJob; github.com/kubeflow/training-operator), and
# installs the Debian packages real nodes run on (containerd, runc, CNI plugins,
# iptables; debootstrap for their image), pinned in versions.env.
# A binary already built at the recorded version is kept; the script says what it built.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

tools="$root/.tools"
bin="$tools/bin"
src="$tools/src"
mkdir -p "$bin" "$src"
# Built binaries are kept outside the clone too, each keyed by its name, version and
# the source that builds it, so a fresh clone (CI) links them instead of building
# again, and changing one component rebuilds that component only.
cache="${TFK8S_CACHE:-$HOME/.cache/tfk8s}/toolchain/built"
mkdir -p "$cache"
# Release builds, without debug information, as Kubernetes' own releases are linked: a quarter
# less CPU on a cold machine (metrics-server: 320 core-seconds against 416, 167 s against 229 on 2
# cores) and binaries a third smaller. Stack traces stay (they need no DWARF); a debugger would not.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-buildvcs=false -trimpath -gcflags=all=-dwarf=false"
strip_ldflags="-s -w"
export GOBIN="$bin"

built=()
kept=()

# Debian packages, at the versions recorded; installed only when one differs.
debian_packages=(
  "containerd=$CONTAINERD_DEB" "runc=$RUNC_DEB" "containernetworking-plugins=$CNI_PLUGINS_DEB"
  "iptables=$IPTABLES_DEB" "debootstrap=$DEBOOTSTRAP_DEB"
)
need_debs=()
for pinned in "${debian_packages[@]}"; do
  # A removed package whose configuration files remain still has a version: it counts as installed
  # only in the state "install ok installed".
  installed="$(dpkg-query -W -f='${Status} ${Version}' "${pinned%%=*}" 2>/dev/null || true)"
  [ "$installed" = "install ok installed ${pinned#*=}" ] || need_debs+=("$pinned")
done
if [ "${#need_debs[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "toolchain: real nodes need these Debian packages, installed as root: ${need_debs[*]}" >&2
    exit 1
  fi
  echo "toolchain: installing ${need_debs[*]}"
  bash "$here/apt_install.sh" "${need_debs[@]}"
  built+=("${need_debs[@]}")
else
  kept+=("${debian_packages[@]}")
fi

# --debian-packages: those only (the nodes' image needs debootstrap, not the Go binaries: `make
# node-image` builds beside the Go build on a fresh machine).
[ "${1:-}" != --debian-packages ] || exit 0

# Targets run at once (make -j, two terminals) may each need the toolchain: one build at a time
# in a checkout, the second finding what the first built.
exec 9>"$tools/.build.lock"
flock 9

# up_to_date NAME KEY: the binary was built at KEY (its version and recipe), here or
# in the cache, from which it is linked.
up_to_date() {
  [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.version" 2>/dev/null)" = "$2" ] && return 0
  [ -x "$cache/$1@$2" ] || return 1
  rm -f "$bin/$1"
  ln "$cache/$1@$2" "$bin/$1" 2>/dev/null || cp -p "$cache/$1@$2" "$bin/$1"
  echo "$2" > "$bin/.$1.version"
}
stamp() { echo "$2" > "$bin/.$1.version"; }
# recipe_key VERSION TEXT: VERSION plus a digest of the source that builds it, and of how Go builds.
recipe_key() { echo "$1-$(printf '%s' "$GOFLAGS $strip_ldflags $2" | sha256sum | cut -c1-12)"; }

# module_dir MODULE VERSION: where the module proxy's download of MODULE@VERSION lies.
module_dir() { (cd "$src" && go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); }

# wrapper_module NAME REQUIREMENT VERSION: a fresh module of our own in .tools/src/NAME that
# requires REQUIREMENT at VERSION, asking for the Go version the upstream module asks for.
wrapper_module() {
  local name="$1" requirement="$2" version="$3" module="$src/$1"
  rm -rf "$module" && mkdir -p "$module"
  local upstream_mod go_version
  upstream_mod="$(cd "$module" && go mod download -json "$requirement@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  go_version="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream_mod")"
  printf 'module tfk8s.local/%s\n\ngo %s\n\nrequire %s %s\n' "$name" "$go_version" "$requirement" "$version" > "$module/go.mod"
}

# build_wrapper NAME VERSION REQUIREMENT [PACKAGE [LDFLAGS]]: build .tools/bin/NAME from a
# module of our own that requires REQUIREMENT at VERSION. Its main.go comes on stdin; or,
# with PACKAGE, the upstream main package is built as it is, linked with LDFLAGS (a
# version a binary reports is set that way). (`go install MODULE@VERSION` reads the
# module's version list, which the proxy refuses for some modules.)
build_wrapper() {
  local name="$1" version="$2" requirement="$3" package="${4:-}" ldflags="${5:-}" main_go=""
  [ -z "$package" ] && main_go="$(cat)"
  local key; key="$(recipe_key "$version" "$requirement $package${ldflags:+ $ldflags} $main_go")"
  if up_to_date "$name" "$key"; then kept+=("$name $version"); return; fi
  echo "toolchain: building $name $version"
  local module="$src/$name"
  wrapper_module "$name" "$requirement" "$version"
  if [ -n "$package" ]; then
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$package" > "$module/tools.go"
  else
    printf '%s\n' "$main_go" > "$module/main.go"
    package=.
  fi
  (cd "$module" && go mod tidy && go build -ldflags "$strip_ldflags $ldflags" -o "$bin/$name" "$package")
  stamp "$name" "$key"; built+=("$name $version")
}

# addon_manifests NAME VERSION MODULE: the module's CustomResourceDefinitions, their
# kustomization (conversion webhooks) and webhook configurations into .tools/addons/NAME
# (the local cluster registers them).
addon_manifests() {
  local name="$1" version="$2" module="$3" target="$tools/addons/$1"
  if [ "$(cat "$target/.version" 2>/dev/null)" = "$version" ]; then kept+=("$name manifests $version"); return; fi
  local dir; dir="$(module_dir "$module" "$version")"
  rm -rf "$target" && mkdir -p "$target/crds"
  cp "$dir"/config/components/crd/bases/*.yaml "$target/crds/"
  cp "$dir/config/components/webhook/manifests.yaml" "$target/webhooks.yaml"
  # Which CRDs convert between API versions through the controller's webhook.
  cp "$dir/config/components/crd/kustomization.yaml" "$target/crd-kustomization.yaml"
  [ -d "$dir/config/components/crd/patches" ] && cp -r "$dir/config/components/crd/patches" "$target/crd-patches"
  chmod -R u+w "$target"
  echo "$version" > "$target/.version"
  built+=("$name manifests $version")
}

kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet)
kube_key="$(recipe_key "$KUBERNETES_VERSION" "${kube_binaries[*]}")"
need_kube=0
for name in "${kube_binaries[@]}"; do
  up_to_date "$name" "$kube_key" || need_kube=1
done

if [ "$need_kube" = 1 ]; then
  echo "toolchain: building Kubernetes $KUBERNETES_VERSION (cold: about 6 minutes on 2 cores)"
  module="$src/kubernetes"
  rm -rf "$module" && mkdir -p "$module"
  # k8s.io/kubernetes replaces its staging modules with local paths that a
  # module download does not have; map each to its published release instead
  # (Kubernetes v1.X.Y publishes them as v0.X.Y).
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  upstream_mod="$(cd "$module" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" \
    | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    echo "module tfk8s.local/kubernetes-toolchain"
    echo
    grep -E '^go [0-9.]+$' "$upstream_mod"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$upstream_mod" \
      | sed -n "s#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 $staging_version#p"
    echo ")"
  } > "$module/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package tools"
    echo
    echo "import ("
    for name in "${kube_binaries[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$name\""; done
    echo ")"
  } > "$module/tools.go"
  (cd "$module" && go mod tidy)
  minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags="$strip_ldflags"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  packages=()
  for name in "${kube_binaries[@]}"; do packages+=("k8s.io/kubernetes/cmd/$name"); done
  (cd "$module" && go build -ldflags "$ldflags" -o "$bin/" "${packages[@]}")
  for name in "${kube_binaries[@]}"; do stamp "$name" "$kube_key"; built+=("$name $KUBERNETES_VERSION"); done
else
  for name in "${kube_binaries[@]}"; do kept+=("$name $KUBERNETES_VERSION"); done
fi

build_wrapper etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 <<'GO'
// etcd's own server entry point, built from its published module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO

kwok_key="$(recipe_key "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok)"
if ! up_to_date kwok "$kwok_key"; then
  echo "toolchain: building kwok $KWOK_VERSION"
  go install -ldflags "$strip_ldflags" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  stamp kwok "$kwok_key"; built+=("kwok $KWOK_VERSION")
else
  kept+=("kwok $KWOK_VERSION")
fi

# CoreDNS registers a plugin when its package is imported: importing only the five
# the local cluster's Corefile uses builds in minutes instead of the full set's eleven.
build_wrapper coredns "$COREDNS_VERSION" github.com/coredns/coredns <<'GO'
// Cluster DNS for the local cluster's real nodes: CoreDNS with the plugins its Corefile uses.
package main

import (
	_ "github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func main() { coremain.Run() }
GO

# The real nodes' resource metrics API (metrics.k8s.io), as metrics-server's Makefile builds it:
# its main package, with the version it reports set through client-go's version package.
build_wrapper metrics-server "$METRICS_SERVER_VERSION" sigs.k8s.io/metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server \
  "-X k8s.io/client-go/pkg/version.gitVersion=$METRICS_SERVER_VERSION"

# The real nodes' NetworkPolicy agent: kube-network-policies' controller package, patched, under a
# main of our own (both in kube-network-policies/; why, there). The patch queues packets to the agent
# through the xtables NFQUEUE target (nft_compat) instead of nftables' own `queue` expression, which
# a kernel built without CONFIG_NFT_QUEUE refuses (ENOENT: no rule loads, nothing is enforced). The
# module is copied into ours and patched there (a replace directive), like the provider below.
build_network_policies() {
  local name=kube-network-policies requirement=sigs.k8s.io/kube-network-policies
  local files="$here/kube-network-policies"
  local key; key="$(recipe_key "$KUBE_NETWORK_POLICIES_VERSION" \
    "$(declare -f build_network_policies) $(cat "$files/main.go" "$files/nfqueue-xt-target.patch")")"
  if up_to_date "$name" "$key"; then kept+=("$name $KUBE_NETWORK_POLICIES_VERSION"); return; fi
  echo "toolchain: building $name $KUBE_NETWORK_POLICIES_VERSION (cold: about 2 minutes on 2 cores)"
  local module="$src/$name"
  wrapper_module "$name" "$requirement" "$KUBE_NETWORK_POLICIES_VERSION"
  cp -r "$(module_dir "$requirement" "$KUBE_NETWORK_POLICIES_VERSION")" "$module/upstream"
  chmod -R u+w "$module/upstream"
  # git apply outside any repository (.tools/ lies inside the clone's): it patches like patch(1),
  # which a minimal Debian lacks.
  (cd "$module/upstream" && GIT_CEILING_DIRECTORIES="$module" git apply "$files/nfqueue-xt-target.patch")
  printf '\nreplace %s => ./upstream\n' "$requirement" >> "$module/go.mod"
  cp "$files/main.go" "$module/main.go"
  (cd "$module" && go mod tidy && go build -ldflags "$strip_ldflags" -o "$bin/$name" .)
  stamp "$name" "$key"; built+=("$name $KUBE_NETWORK_POLICIES_VERSION")
}
build_network_policies

# kwok's own pod stages but the one that completes every Job's pods at once: kwok
# runs the local cluster's pods until they are deleted, as PS and workers run.
kwok_stages="$tools/addons/kwok/stages"
if [ "$(cat "$kwok_stages/.version" 2>/dev/null)" != "$KWOK_VERSION" ]; then
  kwok_dir="$(module_dir sigs.k8s.io/kwok "$KWOK_VERSION")"
  rm -rf "$kwok_stages" && mkdir -p "$kwok_stages"
  cp "$kwok_dir"/kustomize/stage/pod/fast/pod-ready.yaml "$kwok_dir"/kustomize/stage/pod/fast/pod-delete.yaml "$kwok_stages/"
  chmod u+w "$kwok_stages"/*.yaml
  echo "$KWOK_VERSION" > "$kwok_stages/.version"
  built+=("kwok pod stages $KWOK_VERSION")
fi

# The experiment's lifecycle (JobSet) and gang admission (Kueue): their controllers and CRDs.
build_wrapper jobset-controller "$JOBSET_VERSION" sigs.k8s.io/jobset sigs.k8s.io/jobset
addon_manifests jobset "$JOBSET_VERSION" sigs.k8s.io/jobset
build_wrapper kueue-controller "$KUEUE_VERSION" sigs.k8s.io/kueue sigs.k8s.io/kueue/cmd/kueue
addon_manifests kueue "$KUEUE_VERSION" sigs.k8s.io/kueue

# Kubeflow's TFJob (make cluster-up TFJOB=1): the training operator's TFJob reconciler and webhook under
# a main of our own (training-operator/main.go says why), and the TFJob CRD and webhook configuration
# from the same module (tools/localcluster/training_operator.py registers them), with its TensorFlow
# examples (tests/realpods/test_kubeflow_examples.py runs them under both). The marker names what the
# folder holds, so a folder copied before the examples were is copied again.
build_wrapper training-operator "$TRAINING_OPERATOR_VERSION" github.com/kubeflow/training-operator \
  < "$here/training-operator/main.go"
training_operator_manifests="$tools/addons/training-operator"
training_operator_marker="$TRAINING_OPERATOR_VERSION crd webhooks examples/tensorflow"
if [ "$(cat "$training_operator_manifests/.version" 2>/dev/null)" != "$training_operator_marker" ]; then
  operator_dir="$(module_dir github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION")"
  rm -rf "$training_operator_manifests" && mkdir -p "$training_operator_manifests"
  cp "$operator_dir/manifests/base/crds/kubeflow.org_tfjobs.yaml" "$training_operator_manifests/"
  cp "$operator_dir/manifests/base/webhook/manifests.yaml" "$training_operator_manifests/webhooks.yaml"
  mkdir "$training_operator_manifests/examples"
  cp -r "$operator_dir/examples/tensorflow" "$training_operator_manifests/examples/"
  chmod -R u+w "$training_operator_manifests"
  echo "$training_operator_marker" > "$training_operator_manifests/.version"
  built+=("training-operator manifests $TRAINING_OPERATOR_VERSION")
else
  kept+=("training-operator manifests $TRAINING_OPERATOR_VERSION")
fi

# The Pulumi engine: the CLI (it reports the version its ldflags give it) ...
build_wrapper pulumi "$PULUMI_VERSION" github.com/pulumi/pulumi/pkg/v3 github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
  "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"

# ... and the Kubernetes provider. Its main package embeds schema-embed.json and
# terraform-mapping-embed.json, which the module does not ship: its own generate.go
# writes them (stamped with VERSION) from the schema.json and terraform-mapping.json it
# does ship, so the main package is copied into our module and generated there.
build_kubernetes_provider() {
  local name=pulumi-resource-kubernetes requirement=github.com/pulumi/pulumi-kubernetes/provider/v4
  local key; key="$(recipe_key "$PULUMI_KUBERNETES_VERSION" "$PULUMI_KUBERNETES_MODULE_VERSION $(declare -f build_kubernetes_provider)")"
  if up_to_date "$name" "$key"; then kept+=("$name $PULUMI_KUBERNETES_VERSION"); return; fi
  echo "toolchain: building $name $PULUMI_KUBERNETES_VERSION (cold: about 8 minutes on 2 cores)"
  local module="$src/$name" upstream
  wrapper_module "$name" "$requirement" "$PULUMI_KUBERNETES_MODULE_VERSION"
  upstream="$(module_dir "$requirement" "$PULUMI_KUBERNETES_MODULE_VERSION")/cmd/$name"
  cp "$upstream"/{main.go,generate.go,schema.json,terraform-mapping.json} "$module/"
  chmod u+w "$module"/*
  (cd "$module" && go mod tidy && VERSION="$PULUMI_KUBERNETES_VERSION" go run generate.go \
    && go build -o "$bin/$name" \
      -ldflags "$strip_ldflags -X $requirement/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" .)
  stamp "$name" "$key"; built+=("$name $PULUMI_KUBERNETES_VERSION")
}
build_kubernetes_provider

for stamp_file in "$bin"/.*.version; do
  name="$(basename "$stamp_file" .version)"; name="${name#.}"
  cached="$cache/$name@$(cat "$stamp_file")"
  [ -x "$bin/$name" ] && [ ! -e "$cached" ] && { ln "$bin/$name" "$cached" 2>/dev/null || cp -p "$bin/$name" "$cached"; }
done

for line in "${built[@]+"${built[@]}"}"; do echo "toolchain: built $line"; done
if [ "${#built[@]}" = 0 ]; then
  echo "toolchain: up to date in .tools/bin (${kept[*]})"
fi
