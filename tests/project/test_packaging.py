"""The project's own plumbing: dependency lists agree, the CLI answers, the contract holds."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> dict[str, str]:
    out = {}
    for req in requirements:
        name = req.replace(" ", "")
        for sep in ("==", ">=", "<=", "~=", "<", ">"):
            if sep in name:
                name, rest = name.split(sep, 1)
                out[name.lower()] = sep + rest
                break
        else:
            out[name.lower()] = ""
    return out


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _names(project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert _names(pip) == wanted


def test_field_validation_knows_the_fields_of_the_release_the_cluster_runs():
    """Strict apply reads the fields of each kind from the official client's models: the client must be of the
    Kubernetes release the embedded API server says it is, or a field of that release is refused as unknown."""
    from labsupport.control.version import K8S_VERSION
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floor = _names(project["dependencies"])["kubernetes"]
    assert floor.startswith(">=") and int(floor[2:].split(".")[0]) >= int(K8S_VERSION.split(".")[1]), floor


def test_cli_doctor_reports_every_backend():
    proc = subprocess.run([sys.executable, "-m", "labsupport.cli", "doctor"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    for backend in ("sim", "netns", "kind"):
        assert backend in proc.stdout
    assert "sim    ready" in proc.stdout


def test_cli_errors_have_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "labsupport.cli", "nonsense"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def _shared(*parts: str) -> pathlib.Path:
    """A path in the reference material beside the clone; its absence skips on a laptop and fails under CI."""
    path = ROOT.parent.joinpath("shared", *parts)
    if not path.exists():
        from labsupport.testing import require
        require([f"the reference material beside the clone (../shared/{'/'.join(parts)})"], "spec")
    return path


def test_contract_check_passes():
    checker = _shared("tools", "contract-check")
    proc = subprocess.run([sys.executable, str(checker)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 differing" in proc.stdout


def test_notebooks_are_stored_without_outputs():
    import json
    for path in list((ROOT / "notebooks").glob("*.ipynb")) + list((ROOT / "grading" / "source").rglob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert not cell.get("outputs"), f"{path.name} is stored with outputs"
                assert cell.get("execution_count") is None, f"{path.name} is stored with execution counts"


def test_golden_copies_match_the_reference_spec():
    reference = _shared("spec", "goldens")
    for copy in (ROOT / "tests" / "goldens").glob("*.txt"):
        assert copy.read_text() == (reference / copy.name).read_text(), f"{copy.name} differs from the spec's"


@pytest.mark.slow
def test_the_editable_install_make_runs_prints_no_warning(tmp_path):
    """`make lab`'s first run installs the project as `make` does (pip -q -e): nothing in that output may look like
    a failure (setuptools' "Editable installation" warning block did)."""
    project = tmp_path / "project"
    files = subprocess.run(["git", "ls-files", "pyproject.toml", "README.md", "labsupport"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, project / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--quiet", "--no-deps", "-e", str(project)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "import labsupport; print(labsupport.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert found.stdout.strip() == str(project / "labsupport" / "__init__.py"), found.stderr


def test_make_lab_takes_a_port_and_an_address():
    proc = subprocess.run(["make", "-n", "-o", ".venv/.installed", "lab", "PORT=8890", "IP=0.0.0.0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    command = " ".join(proc.stdout.replace("\\\n", " ").split())
    assert "-m labsupport.student_lab --notebook-dir=notebooks --port=8890 --ip=0.0.0.0" in command, command
