"""dtsim from Python: predictions of distributed training as dicts.

    import dtsim
    report = dtsim.run("scenarios/default.yaml")        # report.json's content
    report["throughput_samples_per_s"]
    dtsim.run({"cluster": {"nodes": 2}, ...})           # a scenario as a dict
    dtsim.sweep("scenarios/sweep-local-sgd-periods.yaml")  # one dict per point
    dtsim.search("scenarios/gpt3-175b-1024xA100-search.yaml", devices=[1024])
    print(dtsim.model("resnet50").summary())

Scenarios are files (docs/scenario.md) or dicts of the same keys. Errors
raise dtsim.UserError (a ValueError) whose message is the one the dtsim
command prints, with file:line:column; a plan that cannot run raises
dtsim.InfeasiblePlan (a UserError). Nothing is written to disk.

The simulator itself is the extension module _dtsim that the build makes
(build/python/, or build-run/python/ after scripts/run.sh); this package
loads the newest of those, or the folder DTSIM_PYTHON_MODULE_DIR names.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

__all__ = ["run", "sweep", "search", "model", "Model", "UserError", "InfeasiblePlan"]


def _load_extension():
    root = Path(__file__).resolve().parent.parent
    if os.environ.get("DTSIM_PYTHON_MODULE_DIR"):
        folders = [Path(os.environ["DTSIM_PYTHON_MODULE_DIR"])]
    else:
        folders = [root / "build" / "python", root / "build-run" / "python"]
    found = []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / ("_dtsim" + suffix)
            if path.is_file():
                found.append(path)
    if not found:
        others = sorted(str(p) for f in folders if f.is_dir() for p in f.glob("_dtsim*.so"))
        why = ("found only " + ", ".join(others) + ", built for another Python than "
               + sys.version.split()[0]) if others else "it is not built"
        raise ImportError(
            "dtsim: no extension module _dtsim in " + " or ".join(str(f) for f in folders)
            + " (" + why + "); build it with scripts/test.sh, or "
            "cmake --build build --target dtsim_python")
    path = max(found, key=lambda p: p.stat().st_mtime)
    spec = importlib.util.spec_from_file_location("dtsim._dtsim", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ext = _load_extension()
UserError = _ext.UserError
InfeasiblePlan = _ext.InfeasiblePlan


def _source(scenario):
    """(path, text) of a scenario given as a path or a dict."""
    if isinstance(scenario, dict):
        # JSON is YAML: the loader reads it with the same checks, and its
        # messages name lines of this text.
        return "<dict>", json.dumps(scenario, indent=2)
    if isinstance(scenario, str) and "\n" in scenario:
        # YAML text (a path has no line break): read as the file's text.
        return "<text>", scenario
    if isinstance(scenario, (str, os.PathLike)):
        return os.fspath(scenario), ""
    raise TypeError("a scenario is a file path or a dict, not " + type(scenario).__name__)


def run(scenario, engine=None):
    """Simulates a scenario (a path or a dict) and returns its report.json
    content as a dict. engine: "analytic" or "simgrid" (default: the
    scenario's). Raises InfeasiblePlan, with the report as .report, when the
    plan does not fit in memory."""
    path, text = _source(scenario)
    report_text, infeasible = _ext.run(path, text, engine or "")
    report = json.loads(report_text)
    if infeasible:
        error = InfeasiblePlan(infeasible)
        error.message, error.hint, error.file, error.line, error.column = (
            infeasible, "", path, 0, 0)
        error.report = report
        raise error
    return report


def sweep(scenario, jobs=0):
    """Simulates every point of a sweep (scalars given as lists are axes,
    study/sweep.h) and returns one dict per point, in point order: name,
    axes, feasible, infeasible, devices and the figures (None where the
    point has none). jobs: threads (0 = one per core)."""
    path, text = _source(scenario)
    return json.loads(_ext.sweep(path, text, jobs))


def search(scenario, devices=(), micro_batch_sizes=(), zero_stages=(), tensor_parallel=(),
           jobs=0, top=10):
    """The fastest plans for the scenario's model on its cluster at its
    global batch (as `dtsim search`): the `top` fastest that fit (0 = all),
    fastest first, each a sweep point's dict with its rank and whether it is
    on the Pareto front; each from a full simulation. Raises InfeasiblePlan
    when no plan fits."""
    path, text = _source(scenario)

    def values(x):  # one count or several; each named once, as the CLI does
        listed = [x] if isinstance(x, int) else list(x)
        return list(dict.fromkeys(listed))

    return json.loads(_ext.search(path, text, values(devices), values(micro_batch_sizes),
                                  values(zero_stages), values(tensor_parallel), jobs, top))


class Model:
    """A model graph's figures: name, params, fwd_flops_per_sample,
    bwd_flops_per_sample, ops, warnings."""

    def __init__(self, figures):
        self._figures = figures
        for key, value in figures.items():
            if key != "table":
                setattr(self, key, value)

    def summary(self):
        """The per-layer table `dtsim model NAME` prints."""
        return self._figures["table"]

    def __repr__(self):
        return "dtsim.Model({!r}, params={:,})".format(self.name, self.params)


def model(name):
    """A zoo model by name, or a model file (.yaml, .yml, .onnx)."""
    return Model(json.loads(_ext.model(os.fspath(name))))
