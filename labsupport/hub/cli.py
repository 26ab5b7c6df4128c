"""`labsupport class up|down|status`: a JupyterHub class on this machine; `labsupport class cluster`: a class on
one shared Kubernetes cluster."""
from __future__ import annotations

import argparse
import pathlib


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `class` and its subcommands to the `labsupport` CLI."""
    klass = subparsers.add_parser("class", help="a JupyterHub class on this machine: real Unix accounts, nbgrader's "
                                                "exchange, the course for the instructor (root)")
    sub = klass.add_subparsers(dest="class_command", required=True)
    up = sub.add_parser("up", help="make the accounts and folders and start JupyterHub on 127.0.0.1")
    up.add_argument("--students", type=int, required=True, help="how many student accounts (labclass-s01 …)")
    up.add_argument("--state-dir", default=None, help="the class's folder (default: LABSUPPORT_CLASS_DIR or "
                                                      "/srv/labsupport-class)")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="stop the hub and every server, delete the accounts and the folders")
    down.add_argument("--state-dir", default=None)
    down.set_defaults(func=cmd_down)
    status = sub.add_parser("status", help="where the class's hub is, and who is in it")
    status.add_argument("--state-dir", default=None)
    status.set_defaults(func=cmd_status)
    cluster = sub.add_parser("cluster", help="a class on one shared Kubernetes cluster: for each student of the "
                                             "roster a namespace, an account, the student Role, limits and a "
                                             "kubeconfig (--delete removes them)")
    who = cluster.add_mutually_exclusive_group()
    who.add_argument("--roster", metavar="CSV", help="the students: a CSV with a header naming an `id` column, as "
                                                     "`nbgrader db student import` reads it")
    who.add_argument("--students", type=int, help="the students of `class up --students N` (labclass-s01 …)")
    cluster.add_argument("--kubeconfig", required=True, help="an administrator's kubeconfig for the cluster")
    cluster.add_argument("--context", default=None, help="its context to use (default: its current context)")
    cluster.add_argument("--out", metavar="DIR", help="where each student's kubeconfig is written (ID.kubeconfig, "
                                                      "mode 0600); needed to make a class")
    cluster.add_argument("--class", dest="class_name", default="services-lab",
                         help="the class's name, labelled on each namespace (default services-lab)")
    cluster.add_argument("--token-expiry", default="24h",
                         help="how long each student's token lasts: 90m, 12h, 7d (default 24h; run again for new "
                              "tokens)")
    cluster.add_argument("--server", metavar="URL", help="the API server address the students' kubeconfigs name "
                                                         "(default: the admin's; where that is this machine's "
                                                         "127.0.0.1, the address the API server listens on)")
    cluster.add_argument("--pod-cidr", action="append", metavar="CIDR",
                         help="the cluster's pod network, for the NetworkPolicies (default: what kube-proxy's "
                              "configuration or the nodes say; repeatable)")
    cluster.add_argument("--load-balancer-pool", metavar="CIDR",
                         help="addresses to share out among the students, a block each, which their LoadBalancer "
                              "Services may ask for (spec.loadBalancerIP); without it they may ask for none")
    cluster.add_argument("--load-balancer-ips", type=int, metavar="N",
                         help="how many addresses each student's block holds (default: the quota's LoadBalancers, 4)")
    cluster.add_argument("--allow-missing-guard", action="append", default=[], metavar="GUARD",
                         help="make the class even though the cluster does not enforce this guard (pod-security, "
                              "pod-defaults, service-addresses, network-policy): students may then reach outside "
                              "their namespace; repeatable, and said loudly")
    cluster.add_argument("--delete", action="store_true", help="delete every namespace and binding of the class "
                                                               "(and the kubeconfigs in --out)")
    cluster.set_defaults(func=cmd_cluster)


def cmd_up(args: argparse.Namespace) -> int:
    """Make the class and print how to reach it."""
    from labsupport.hub.roster import numbered_roster
    from labsupport.hub.service import up
    state = up(numbered_roster(args.students), pathlib.Path(args.state_dir) if args.state_dir else None)
    _print(state)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Take the class down."""
    from labsupport.hub.service import down
    from labsupport.hub.state import read_state, state_dir
    state = read_state(state_dir(args.state_dir))
    if state is None:
        print(f"no class in {state_dir(args.state_dir)}")
        return 0
    for line in down(state):
        print(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print the class (exit 1 when there is none)."""
    from labsupport.hub.state import read_state, state_dir
    state = read_state(state_dir(args.state_dir))
    if state is None:
        print(f"no class in {state_dir(args.state_dir)} (start one with `labsupport class up --students N`)")
        return 1
    _print(state)
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    """Make, bring up to date, or delete a class on a shared cluster."""
    from labsupport.hub.cluster import ClassClusterError, delete_class, make_class, parse_duration
    from labsupport.hub.roster import numbered_roster, read_roster
    from labsupport.i18n import tr
    if args.delete:
        lines = delete_class(args.kubeconfig, class_name=args.class_name, out=args.out, context=args.context)
    else:
        if not args.out:
            raise ClassClusterError(tr("--out DIR is needed: the folder each student's kubeconfig is written to"))
        if args.roster:
            students = [s.id for s in read_roster(args.roster)]
        elif args.students is not None:
            students = numbered_roster(args.students).students
        else:
            raise ClassClusterError(tr("name the students: --roster FILE.csv or --students N"))
        lines = make_class(students, args.kubeconfig, args.out, class_name=args.class_name,
                           token_seconds=parse_duration(args.token_expiry), context=args.context,
                           server=args.server, pod_cidrs=args.pod_cidr, load_balancer_pool=args.load_balancer_pool,
                           load_balancer_ips=args.load_balancer_ips, allow_missing=args.allow_missing_guard)
    for line in lines:
        print(line)
    return 0


def _print(state) -> None:
    print(f"class hub: {state.url}  (state: {state.path}, root only)")
    print(f"instructor: {state.instructor}  course: {state.course}")
    print(f"students: {', '.join(state.students)}")
    print(f"exchange: the hub's service {state.url}/services/exchange/ (store {state.exchange}, its account's only)")
