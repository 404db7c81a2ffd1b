# tfk8s: every target sets up what it needs on a fresh machine.
# Two environments: the Pulumi program's (.venv, protobuf 5/6 as pulumi needs)
# and the trainer's (.venv-trainer, TensorFlow with protobuf 6). They never mix.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
TRAINER_VENV := .venv-trainer
TRAINER_STAMP := $(TRAINER_VENV)/.installed
# The policy pack's environment, where policy/PulumiPolicy.yaml (virtualenv: venv)
# has the Pulumi CLI look for it; without it `--policy-pack policy` hangs.
POLICY_VENV := policy/venv
POLICY_STAMP := $(POLICY_VENV)/.installed
STACK ?= scene1-case3
# A variable's value as one shell word, whatever it holds: `make render STACK='a --out DIR'` names a
# stack 'a --out DIR' (which does not exist), never a flag; quotes, `;`, backquotes and globs in it
# stay text. What it does not guard: make expands a command-line value before the shell sees it
# (`STACK='$(shell ...)'` runs as on any make command line: the one typing holds that power anyway),
# and ARGS, STACKS and PARTITIONS are word lists on purpose, split and read by the shell.
quote = '$(subst ','"'"',$(1))'
# A target's variables, each set, or a usage line naming them (exit 2, as the commands' bad input).
# `+` runs the check under `make -n` too, so that a dry run shows the usage line, not the build.
require = +@$(foreach name,$(1),test -n $(call quote,$(strip $($(name)))) &&) true || { echo "usage: make $@ $(2)" >&2; exit 2; }
# A target's prerequisites, only once its variables are set: with one missing, its usage line comes
# at once instead of after the toolchain's build (half an hour on a fresh machine).
given = $(if $(filter 0,$(foreach name,$(1),$(if $(strip $($(name))),1,0))),,$(2))
STEPS ?= 200
# make report: the seeds' question (scene 1 against scene 2, none against auto) by default.
STACKS ?= scene1-case2 scene2-case2
PARTITIONS ?= none auto
# The seed's ads model is sparse-heavy: many ids per example into a wide table. With the
# default model the PS work is mostly fixed per-call overhead and no PS stands out.
REPORT_SETTINGS ?= --batch-size 1024 --ids-per-example 128 --embedding-dim 64

.PHONY: setup demo plan local tune test test-local below-real-pods lint test-shells test-program test-trainer test-cluster bench bench-trainer bench-start bench-cluster \
	test-real bench-real bench-program bench-tune bench-engine bench-engine-start bench-vs-tfjob image load-image node-image debian-packages toolchain render cluster-up cluster-user cluster-down apply delete preview up destroy pulumi status diff report docs clean dist

# Each environment is kept outside the clone, keyed by its pins, and linked (tools/toolchain/venv.sh).
$(STAMP): requirements.txt requirements-live.txt requirements-dev.txt policy/requirements.txt
	PYTHON=$(PYTHON) bash tools/toolchain/venv.sh $(VENV) requirements-dev.txt
	touch $(STAMP)

$(TRAINER_STAMP): trainer/requirements.txt requirements-live.txt
	PYTHON=$(PYTHON) bash tools/toolchain/venv.sh $(TRAINER_VENV) trainer/requirements.txt
	touch $(TRAINER_STAMP)

$(POLICY_STAMP): policy/requirements.txt
	PYTHON=$(PYTHON) bash tools/toolchain/venv.sh $(POLICY_VENV) policy/requirements.txt
	touch $(POLICY_STAMP)

setup: $(STAMP) $(TRAINER_STAMP) $(POLICY_STAMP)

# The embedded default: who runs where for a seed experiment, then its trainer
# settings and PS:worker ratio run as local processes.
demo: plan local

# Who runs where, from the stack file alone: no cluster, no Pulumi CLI.
plan: $(call given,STACK,$(STAMP))
	$(call require,STACK,STACK=<stack>)
	$(VENV)/bin/python -m components plan $(call quote,$(STACK))

# The stack is validated in the program's environment, then trained in the trainer's.
local: $(call given,STACK STEPS,$(STAMP) $(TRAINER_STAMP))
	$(call require,STACK STEPS,STACK=<stack> STEPS=<steps>)
	$(TRAINER_VENV)/bin/python -m trainer.local --stack $(call quote,$(STACK)) --steps $(call quote,$(STEPS))

# Each stage's output is printed whole as it ends. The control-plane stage comes first, with the real
# nodes' images (a no-op once cached, minutes on a fresh machine, beside the Go build). The real-pod
# stage comes next: it measures CPU use and step times, and leaves the cores about a third idle,
# which lint, the program's tests and the trainer's (no cluster, no fixed ports, no host changes) take
# at the lowest priority (nice 19): the pods' tasks, the kubelets and the API server always come
# first. The trainer's tests beside the control-plane stage made that stage's controllers wait for
# CPU (9.5 minutes against 7.9 alone), and the control-plane stage beside the real pods was slower
# still (docs/local-cluster.md).
test: setup
	$(MAKE) --no-print-directory -j4 --output-sync=target test-cluster node-image
	$(MAKE) --no-print-directory -j2 --output-sync=target test-real below-real-pods

below-real-pods:
	nice -n 19 $(MAKE) --no-print-directory lint test-program test-trainer

test-local:
	$(MAKE) --no-print-directory test-program
	$(MAKE) --no-print-directory test-trainer

# ruff (lint, then formatting) and mypy over the code tfk8s ships; settings in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/mypy

# The task shell's tests run under each /bin/sh that images have: busybox is installed for them.
test-shells:
	bash tools/toolchain/test_shells.sh

# Each stage ends with its slowest tests, so that a slower loop shows where its time went.
SLOWEST := --durations=15

test-program: $(STAMP) $(POLICY_STAMP) test-shells
	$(VENV)/bin/python -m pytest tests --ignore=tests/trainer --ignore=tests/cluster --ignore=tests/realpods $(SLOWEST)

# One local cluster per machine (its ports, bridge and host changes): runs of the suites that bring
# one up wait for each other on this lock instead of colliding.
CLUSTER_LOCK ?= /tmp/tfk8s-cluster.lock

# Real admission and scheduling: the objects against a local control plane.
test-cluster: $(STAMP) toolchain
	flock $(CLUSTER_LOCK) $(VENV)/bin/python -m pytest tests/cluster -n 2 --dist loadfile $(SLOWEST)

# Experiments in real pods on two real kubelet nodes (root; builds the images first).
test-real: $(STAMP) $(TRAINER_STAMP) toolchain node-image
	flock $(CLUSTER_LOCK) $(VENV)/bin/python -m pytest tests/realpods $(SLOWEST)

test-trainer: $(STAMP) $(TRAINER_STAMP)
	$(TRAINER_VENV)/bin/python -m pytest tests/trainer --confcutdir=tests/trainer $(SLOWEST)

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/program_under_mocks.py

bench-cluster: $(STAMP) toolchain
	$(VENV)/bin/python benchmarks/cluster_apply.py

bench-real: $(STAMP) $(TRAINER_STAMP) toolchain node-image
	$(VENV)/bin/python benchmarks/real_node.py

# A team's TF2 program from a program stack against a hand-written JobSet, on a real node.
bench-program: $(STAMP) toolchain node-image
	$(VENV)/bin/python benchmarks/program_overhead.py

# tune against a grid of 8 configurations around its starting stack, on two real nodes (root).
bench-tune: $(STAMP) $(POLICY_STAMP) toolchain node-image
	flock $(CLUSTER_LOCK) $(VENV)/bin/python benchmarks/tune.py

# The real Pulumi engine beside tfk8s's own applier on the local control plane.
bench-engine: $(STAMP) $(POLICY_STAMP) toolchain
	$(VENV)/bin/python benchmarks/engine.py

# `make up`'s start, stage by stage, to the JobSet requested: quiet and beside other work.
bench-engine-start: $(STAMP) $(POLICY_STAMP) toolchain
	$(VENV)/bin/python benchmarks/engine_start.py

# Kubeflow's TFJob and tfk8s side by side on the same real nodes: one TFJob, run by the training
# operator and as its import-tfjob stack (root; builds the images first).
bench-vs-tfjob: $(STAMP) $(POLICY_STAMP) toolchain node-image
	flock $(CLUSTER_LOCK) $(VENV)/bin/python benchmarks/vs_tfjob.py

bench-trainer: $(TRAINER_STAMP)
	$(TRAINER_VENV)/bin/python benchmarks/trainer_partitioning.py

# A trainer task's start (importing TensorFlow) against a plain import, side by side.
bench-start: $(TRAINER_STAMP)
	$(TRAINER_VENV)/bin/python benchmarks/task_start.py

# -- the objects on a real control plane (local, 127.0.0.1 only) ----------------
# Kubernetes, etcd and kwok built from the Go module proxy into .tools/bin
# (versions in tools/toolchain/versions.env); a no-op once built.
toolchain:
	bash tools/toolchain/build.sh

# A team's program's image for the local cluster: the nodes' TensorFlow image plus pinned packages.
image: $(call given,NAME REQUIREMENTS,$(STAMP) node-image)
	$(call require,NAME REQUIREMENTS,NAME=<name> REQUIREMENTS=<file>)
	$(VENV)/bin/python -m tools.localcluster image --name $(call quote,$(NAME)) --requirements $(call quote,$(REQUIREMENTS))

# An image built elsewhere (docker save, podman save, an OCI tarball) into the local cluster's real nodes.
load-image: $(call given,ARCHIVE,$(STAMP))
	$(call require,ARCHIVE,ARCHIVE=<file>)
	$(VENV)/bin/python -m tools.localcluster load-image --archive $(call quote,$(ARCHIVE))

# The real nodes' images (TensorFlow, pause), cached outside the clone by their inputs. They need
# debootstrap, not the Go binaries: on a fresh machine they build beside those.
node-image: debian-packages
	$(PYTHON) -m tools.nodeimage

# The Debian packages real nodes run on, and debootstrap (versions.env); root installs them.
debian-packages:
	bash tools/toolchain/build.sh --debian-packages

# Every object the program registers, one YAML file each, into out/$(STACK)/.
render: $(call given,STACK,$(STAMP))
	$(call require,STACK,STACK=<stack>)
	$(VENV)/bin/python -m components render $(call quote,$(STACK))

# REAL=srv-00,srv-01: those servers run as real kubelet nodes (root), the others on kwok.
REAL ?=
# TFJOB=1: Kubeflow's TFJob too (its CRD and training operator; tools/localcluster/training_operator.py).
TFJOB ?=
# A variable: a comma inside $(call require,...)'s arguments would split them.
CLUSTER_UP_USAGE := STACK=<stack> [REAL=<server>,...] [TFJOB=1]
cluster-up: $(if $(filter-out 1,$(TFJOB)),,$(call given,STACK,$(STAMP) toolchain $(if $(REAL),node-image)))
	$(call require,STACK,$(CLUSTER_UP_USAGE))
	+@case $(call quote,$(TFJOB)) in ''|1) ;; *) echo "usage: make $@ $(CLUSTER_UP_USAGE): TFJOB takes 1 or nothing, not $(call quote,$(TFJOB))" >&2; exit 2;; esac
	$(VENV)/bin/python -m tools.localcluster up --stack $(call quote,$(STACK)) $(if $(REAL),--real $(call quote,$(REAL))) $(if $(TFJOB),--tfjob)

cluster-down: $(STAMP)
	$(VENV)/bin/python -m tools.localcluster down

apply: $(call given,STACK,$(STAMP))
	$(call require,STACK,STACK=<stack>)
	$(VENV)/bin/python -m tools.localcluster apply $(call quote,$(STACK))

delete: $(call given,STACK,$(STAMP))
	$(call require,STACK,STACK=<stack>)
	$(VENV)/bin/python -m tools.localcluster delete $(call quote,$(STACK))

# The real Pulumi engine against the local cluster: the toolchain's CLI and provider, a
# file backend under .cluster/pulumi/, the policy pack on preview and up (tools/engine).
# KUBECONFIG=<file> on the command line (not from the environment): run as that user, e.g. one
# `make cluster-user` minted; by default the local cluster's admin.
preview up destroy: $(call given,STACK,$(STAMP) $(POLICY_STAMP) toolchain)
	$(call require,STACK,STACK=<stack> [KUBECONFIG=<file>])
	$(VENV)/bin/python -m tools.engine $@ $(call quote,$(STACK)) $(if $(filter command line,$(origin KUBECONFIG)),--kubeconfig $(call quote,$(KUBECONFIG)))

# tune's rounds (components/tune/, docs/observing.md) with the same engine and backend:
# make tune STACK=<stack> [ARGS='--rounds 3 --round-seconds 60 --json'].
tune: $(call given,STACK,$(STAMP) $(POLICY_STAMP) toolchain)
	$(call require,STACK,STACK=<stack> [ARGS='--rounds N --round-seconds S --json'] [KUBECONFIG=<file>])
	$(VENV)/bin/python -m tools.engine tune $(call quote,$(STACK)) $(if $(filter command line,$(origin KUBECONFIG)),--kubeconfig $(call quote,$(KUBECONFIG))) $(ARGS)

# The built CLI on the same backend, for what does not run the program:
# make pulumi STACK=<stack> ARGS='config set --secret --path tfk8s:program.env.TOKEN' (docs/secrets.md).
ARGS ?=
# A team member of the local cluster with exactly the documented RBAC (docs/shared-cluster.md):
# .cluster/users/$(NAME).kubeconfig. LABEL_NODES=1 adds the node labeller (stacks with placeBy: labels).
cluster-user: $(call given,NAME NAMESPACE,$(STAMP))
	$(call require,NAME NAMESPACE,NAME=<user> NAMESPACE=<namespace> [LABEL_NODES=1])
	$(VENV)/bin/python -m tools.localcluster user --name $(call quote,$(NAME)) --namespace $(call quote,$(NAMESPACE)) $(if $(LABEL_NODES),--label-nodes)

pulumi: $(call given,STACK,$(STAMP) toolchain)
	$(call require,STACK,STACK=<stack> ARGS='<pulumi arguments>')
	$(VENV)/bin/python -m tools.engine pulumi $(call quote,$(STACK)) -- $(ARGS)

# docs/stack-reference.md, from the models' field descriptions (make test fails when it is stale).
docs: $(STAMP)
	$(VENV)/bin/python -m components.spec.reference

# Runs each stack and partition locally; writes reports/<name>/ (report.md, report.json, PNG plots).
report: $(call given,STACKS PARTITIONS STEPS,$(STAMP) $(TRAINER_STAMP))
	$(call require,STACKS PARTITIONS STEPS,[STACKS='<stack> ...'] [PARTITIONS='<partition> ...'] [STEPS=<steps>])
	$(TRAINER_VENV)/bin/python -m trainer.report --stacks $(STACKS) --partitions $(PARTITIONS) --steps $(STEPS) $(REPORT_SETTINGS)

# Two experiments side by side: config, plan and objects. make exits 2 for any command that fails,
# so `make diff` exits 0 for the same experiment and 2 otherwise, diff's own code in make's
# "Error 1" (different) or "Error 2" (bad input) line; `.venv/bin/python -m components diff A B`
# exits as diff does (0 same, 1 different, 2 bad input).
diff: $(call given,A B,$(STAMP))
	$(call require,A B,A=<stack> B=<stack>)
	$(VENV)/bin/python -m components diff $(call quote,$(A)) $(call quote,$(B))

status: $(call given,STACK,$(STAMP))
	$(call require,STACK,STACK=<stack>)
	$(VENV)/bin/python -m components status $(call quote,$(STACK)) --kubeconfig .cluster/kubeconfig

# The wheel a platform team installs in its own Pulumi project (docs/library.md): dist/tfk8s-*.whl.
dist: $(STAMP)
	$(VENV)/bin/python -m build --wheel --outdir dist .

clean:
	rm -rf $(VENV) $(TRAINER_VENV) $(POLICY_VENV) .pytest_cache .hypothesis out
