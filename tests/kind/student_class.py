"""A class of three students on the tier's cluster, made by `labsupport class cluster` as an instructor would, shared by
the class tests and the escape suite (`conftest.shared_class`): each student a namespace with every guard, a
kubeconfig, and a block of load-balancer addresses of their own."""
from __future__ import annotations

import pathlib
import secrets
from dataclasses import dataclass, field

from labsupport import Lab
from labsupport import cli
from labsupport.errors import NotFound
from labsupport.hub import cluster

#: The students' blocks of load-balancer addresses: the top /27 of the kind load balancer's pool, four each.
LOAD_BALANCER_POOL = "172.30.255.224/27"


@dataclass
class StudentClass:
    """The class: its name, the students' ids (A, B, C), where their kubeconfigs are, and their labs once opened."""

    name: str
    students: list[str]
    out: pathlib.Path
    admin: str
    labs: dict[str, Lab] = field(default_factory=dict)

    def kubeconfig(self, student: str) -> str:
        """The kubeconfig `class cluster` wrote for a student."""
        return str(self.out / f"{student}.kubeconfig")

    def lab(self, student: str) -> Lab:
        """The student's `Lab(backend="kube")` with their own kubeconfig (opened once)."""
        if student not in self.labs:
            self.labs[student] = Lab(backend="kube", kubeconfig=self.kubeconfig(student))
        return self.labs[student]

    def namespace(self, student: str) -> str:
        """The student's namespace."""
        return cluster.namespace_of(student)


def make_class(admin: str, folder: pathlib.Path) -> StudentClass:
    """`labsupport class cluster` for three students, with load-balancer blocks; fails if the command does."""
    tag = secrets.token_hex(3)
    students = [f"{who}-{tag}" for who in ("ann", "ben", "cat")]
    roster = folder / "roster.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},,,\n" for s in students))
    out = folder / "class"
    code = cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", admin, "--out", str(out),
                     "--class", f"t-shared-{tag}", "--token-expiry", "2h", "--load-balancer-pool", LOAD_BALANCER_POOL])
    assert code == 0, "labsupport class cluster failed (its error is above)"
    return StudentClass(f"t-shared-{tag}", students, out, admin)


def remove_class(klass: StudentClass, admin_lab: Lab) -> None:
    """Close the students' labs and delete the class (namespaces, bindings, kubeconfigs)."""
    for lab in klass.labs.values():
        lab.close()
    try:
        cluster.delete_class(klass.admin, class_name=klass.name, out=klass.out)
    except cluster.ClassClusterError:
        for student in klass.students:
            try:
                admin_lab.delete("namespaces", klass.namespace(student), namespace=None)
            except NotFound:
                pass
