"""The local cluster from the command line (the Makefile's cluster-up, apply, delete, cluster-down).

python -m tools.localcluster up --stack S [--stack T ...] [--real srv-00,srv-01] [--tfjob]
                                                           start it, one node per server of S, T: kwok,
                                                           or a real kubelet for those named in --real;
                                                           --tfjob: Kubeflow's TFJob CRD and operator too
python -m tools.localcluster nodes --stack S                add the servers of another stack
python -m tools.localcluster apply S                        render S, apply it, wait until its pods run
python -m tools.localcluster delete S                       delete S's objects and exactly its node labels
python -m tools.localcluster down                           stop every process it started
python -m tools.localcluster user --name U --namespace N [--label-nodes]
                                                           a team member holding exactly docs/rbac/'s roles in
                                                           N: .cluster/users/U.kubeconfig (make cluster-user)
python -m tools.localcluster image --name N --requirements F
                                                           the TensorFlow image plus pinned packages, into the
                                                           cache and the running real nodes (make image)
python -m tools.localcluster load-image --archive F         an image built elsewhere, likewise (make load-image)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from components.objects.loading import load_experiment
from components.objects.render import render
from components.spec.models import StackConfigError
from components.spec.stack_files import PROJECT_ROOT
from tools.nodeimage.program_images import build_program_image, keep_archive

from . import host, lifecycle, paths, processes, realnodes, users
from .client import api_client
from .experiment_pods import wait_for_pods
from .experiments import ApplyError, ExperimentNotRunning, apply_manifests, delete_manifests, rendered_objects
from .nodes import create_fake_nodes

DEFAULT_WAIT_S = 300.0


def _say(message: str) -> None:
    print(f"[cluster] {message}", flush=True)


def add_nodes(stacks: list[str], kubeconfig: Path = paths.KUBECONFIG) -> int:
    """Create the fake servers of `stacks`; how many."""
    configs = [load_experiment(stack).config for stack in stacks]
    return len(create_fake_nodes(api_client(kubeconfig), configs))


def rendered_dir(stack: str) -> Path:
    return PROJECT_ROOT / "out" / stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.localcluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the local control plane with the stacks' servers")
    up.add_argument("--stack", action="append", default=[], help="create a node per server of this stack")
    up.add_argument(
        "--real",
        default="",
        help="comma-separated servers that run as real kubelet nodes (containerd, runc) instead of kwok",
    )
    up.add_argument(
        "--tfjob",
        action="store_true",
        help="also install Kubeflow's TFJob CRD and run its training operator (TFJob scheme only)",
    )
    user = commands.add_parser("user", help="a team member with only the documented RBAC in a namespace")
    user.add_argument("--name", required=True, help="the user's name (a DNS label)")
    user.add_argument("--namespace", required=True, help="the team's namespace, created if missing")
    user.add_argument(
        "--label-nodes", action="store_true", help="bind tfk8s-node-labeller too, for stacks with placeBy: labels"
    )
    nodes = commands.add_parser("nodes", help="add the fake servers of more stacks")
    nodes.add_argument("--stack", action="append", required=True)
    for name, text in (
        ("apply", "render and apply a stack, wait until its pods run"),
        ("delete", "delete a stack's objects and node labels"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("stack")
        command.add_argument("--kubeconfig", type=Path, default=paths.KUBECONFIG)
    commands.choices["apply"].add_argument(
        "--timeout", type=float, default=DEFAULT_WAIT_S, help="seconds to wait for the pods"
    )
    commands.add_parser("down", help="stop the local control plane")
    image = commands.add_parser("image", help="a program's image: the TensorFlow image plus pinned packages")
    image.add_argument("--name", required=True)
    image.add_argument("--requirements", required=True, type=Path)
    load = commands.add_parser("load-image", help="a program's image built elsewhere (docker or OCI archive)")
    load.add_argument("--archive", required=True, type=Path)
    args = parser.parse_args(argv)

    try:
        if args.command == "up":
            started = time.monotonic()
            real = [name for name in args.real.split(",") if name]
            plane = lifecycle.up(stacks=args.stack, real=real, tfjob=args.tfjob, say=_say)
            _say(f"cluster ready in {time.monotonic() - started:.1f} s at {plane.server}")
            _say(f"kubeconfig: {paths.KUBECONFIG.relative_to(PROJECT_ROOT)}; stop it with `make cluster-down`")
        elif args.command == "user":
            kubeconfig = users.mint_user(args.name, args.namespace, args.label_nodes)
            roles = users.EXPERIMENTER_ROLE + (f" and {users.NODE_LABELLER_ROLE}" if args.label_nodes else "")
            _say(
                f"user {args.name}: {roles} in namespace {args.namespace}; kubeconfig "
                f"{kubeconfig.relative_to(PROJECT_ROOT)}"
            )
        elif args.command == "nodes":
            _say(f"{add_nodes(args.stack)} fake servers for {', '.join(args.stack)}")
        elif args.command == "down":
            stopped = lifecycle.down(say=_say)
            _say(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
        elif args.command == "apply":
            experiment = load_experiment(args.stack)
            out_dir = rendered_dir(experiment.stack)
            render(experiment, out_dir)
            api = api_client(args.kubeconfig)
            started = time.monotonic()
            apply_manifests(api, experiment.stack, rendered_objects(experiment, out_dir), _say)
            try:
                times = wait_for_pods(api, experiment, args.timeout, _say, started)
            except ExperimentNotRunning as state:
                _say(str(state))
            else:
                _say(
                    f"every PS and worker pod bound after {times.bound_s:.1f} s, running after {times.running_s:.1f} s"
                )
        elif args.command in ("image", "load-image"):
            if args.command == "image":
                archive = build_program_image(args.name, args.requirements, _say).archive
            else:
                archive = keep_archive(args.archive)
            # An archive built elsewhere may reuse its file name for new content: always imported.
            keyed = args.command == "image"
            imported = realnodes.import_archive(paths.DEFAULT_CLUSTER, archive, keyed=keyed)
            _say(
                f"in {', '.join(imported)}"
                if imported
                else f"kept in {archive.parent}: no local cluster with real nodes runs; "
                "`make cluster-up REAL=...` imports it"
            )
        elif args.command == "delete":
            experiment = load_experiment(args.stack)
            out_dir = rendered_dir(experiment.stack)
            render(experiment, out_dir)
            delete_manifests(api_client(args.kubeconfig), experiment.stack, rendered_objects(experiment, out_dir), _say)
    except StackConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except (
        processes.ClusterError,
        host.HostError,
        ApplyError,
        FileNotFoundError,
        ValueError,
        users.UserError,
        subprocess.CalledProcessError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
