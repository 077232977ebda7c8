"""The Python module as a user meets it: `import dtsim` from the repository's
root, against the dtsim executable's own figures (argv[1] is its path).
Run by ctest (python/CMakeLists.txt) with the interpreter the module was
built for."""

import json
import os
import subprocess
import sys
import unittest

# The package dtsim/ at the repository's root, as `python3 -c "import dtsim"`
# finds it there.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dtsim  # noqa: E402

DTSIM = sys.argv.pop(1) if len(sys.argv) > 1 else "build/tools/dtsim"


def dtsim_json(*args):
    """`dtsim ARGS --json -`: the report the executable writes."""
    out = subprocess.run([DTSIM, *args, "--json", "-", "-q"], check=False,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, json.loads(out.stdout) if out.stdout else None


# GPT-2 on one node of 4 A100s, plans searched at a global batch of 16.
GPT2_ON_4 = {"cluster": {"nodes": 1, "devices_per_node": 4, "device": "A100-SXM4-80GB",
                         "intra_node_link": "nvlink3"},
             "workload": {"model": "gpt2", "precision": "bf16", "iterations": 2},
             "parallelism": {"strategy": "hybrid", "global_batch": 16}}


class RunTest(unittest.TestCase):
    def test_run_gives_the_executables_report(self):
        # Expected: `dtsim run scenarios/default.yaml --json -`, whole.
        status, expected = dtsim_json("run", "scenarios/default.yaml")
        self.assertEqual(status, 0)
        report = dtsim.run("scenarios/default.yaml")
        self.assertEqual(report, expected)
        self.assertEqual(report["throughput_samples_per_s"],
                         expected["throughput_samples_per_s"])

    def test_a_dict_is_a_scenario(self):
        with open("scenarios/default.yaml") as f:
            text = f.read()
        # The same keys as a dict: only the name and outputs differ from the
        # file's (json is yaml), so the figures match.
        scenario = {"name": "default",
                    "cluster": {"nodes": 2, "devices_per_node": 4, "device": "V100-SXM2-32GB",
                                "intra_node_link": "nvlink2",
                                "network": {"link": "100GbE"}},
                    "workload": {"model": "resnet50", "batch_per_device": 64,
                                 "precision": "fp16", "iterations": 5}}
        self.assertIn("batch_per_device: 64", text)
        self.assertEqual(dtsim.run(scenario)["throughput_samples_per_s"],
                         dtsim.run("scenarios/default.yaml")["throughput_samples_per_s"])

    def test_errors_carry_the_location(self):
        with self.assertRaises(dtsim.UserError) as caught:
            dtsim.run({"cluster": {"nodes": 0}})
        e = caught.exception
        self.assertIsInstance(e, ValueError)
        self.assertEqual(e.file, "<dict>")
        self.assertEqual(e.line, 3)  # "nodes": 0 in json.dumps(indent=2)'s third line
        self.assertIn("<dict>:3:", str(e))
        with self.assertRaises(dtsim.UserError) as missing:
            dtsim.run("scenarios/no-such-file.yaml")
        self.assertIn("no-such-file.yaml", str(missing.exception))
        with self.assertRaises(TypeError):
            dtsim.run(42)

    def test_a_plan_that_does_not_fit_is_refused(self):
        with self.assertRaises(dtsim.InfeasiblePlan) as caught:
            dtsim.run({"workload": {"model": "gpt3-175b", "batch_per_device": 1}})
        self.assertIsNone(caught.exception.report["throughput_samples_per_s"])


class StudyTest(unittest.TestCase):
    def test_sweep_matches_each_points_run(self):
        points = dtsim.sweep({"cluster": {"nodes": [1, 2], "devices_per_node": 2},
                              "workload": {"model": "cifar10-cnn", "iterations": 2}}, jobs=1)
        self.assertEqual([p["axes"]["cluster.nodes"] for p in points], [1, 2])
        alone = dtsim.run({"cluster": {"nodes": 2, "devices_per_node": 2},
                           "workload": {"model": "cifar10-cnn", "iterations": 2}})
        self.assertAlmostEqual(points[1]["throughput_samples_per_s"],
                               alone["throughput_samples_per_s"], delta=1e-9 * alone[
                                   "throughput_samples_per_s"])

    def test_sweep_points_are_the_executables(self):
        # The same sweep through `dtsim sweep` (its sweep.csv) and
        # dtsim.sweep: the same points in the same order, the same figures.
        import csv
        import tempfile
        scenario = {"cluster": {"nodes": [1, 2, 4], "devices_per_node": 2},
                    "workload": {"model": "cifar10-cnn", "iterations": 2}}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "sweep.json")  # JSON is YAML
            with open(path, "w") as f:
                json.dump(scenario, f)
            subprocess.run([DTSIM, "sweep", path, "-o", tmp, "-q"], check=True,
                           capture_output=True, timeout=300)
            with open(os.path.join(tmp, "sweep.csv")) as f:
                rows = list(csv.DictReader(f))
        points = dtsim.sweep(scenario, jobs=1)
        self.assertEqual(len(points), len(rows))
        for point, row in zip(points, rows):
            self.assertEqual(float(point["axes"]["cluster.nodes"]), float(row["cluster.nodes"]))
            for figure in ("throughput_samples_per_s", "step_time_s", "scaling_efficiency"):
                expected = float(row[figure])
                self.assertAlmostEqual(point[figure], expected, delta=1e-6 * abs(expected), msg=figure)

    def test_search_ranks_plans(self):
        plans = dtsim.search(GPT2_ON_4, devices=[4], jobs=1, top=3)
        self.assertEqual([p["rank"] for p in plans], list(range(1, len(plans) + 1)))
        self.assertIn("search.tensor_parallel", plans[0]["axes"])
        # Issue 44 item 9: one count for devices=, and options named twice,
        # as the CLI takes them.
        again = dtsim.search(GPT2_ON_4, devices=4, tensor_parallel=[1, 1, 2, 2], jobs=1, top=3)
        self.assertTrue(all(p["axes"]["search.tensor_parallel"] in (1, 2) for p in again))

    def test_search_rows_are_the_executables(self):
        # The same scenario through `dtsim search` (search.csv: every plan it
        # simulated) and dtsim.search (ranked): the same plans with the same
        # figures, in the executable's ranking.
        import csv
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "gpt2.json")  # JSON is YAML
            with open(path, "w") as f:
                json.dump(GPT2_ON_4, f)
            subprocess.run([DTSIM, "search", path, "--devices", "4", "-o", tmp, "-q"], check=True,
                           capture_output=True, timeout=300)
            with open(os.path.join(tmp, "search.csv")) as f:
                rows = list(csv.DictReader(f))
        axes = ("data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batch_size",
                "schedule", "zero_stage", "recompute")

        def key(get):
            return tuple(str(get("search." + a)).replace(".0", "") for a in axes)
        cli = {key(r.get): float(r["throughput_samples_per_s"]) for r in rows}
        plans = dtsim.search(GPT2_ON_4, devices=[4], jobs=1, top=len(rows))
        self.assertEqual(len(plans), len(cli))
        for plan in plans:
            expected = cli[key(plan["axes"].get)]
            self.assertAlmostEqual(plan["throughput_samples_per_s"], expected, delta=1e-6 * expected)
        ranked = [p["throughput_samples_per_s"] for p in plans]
        self.assertEqual(ranked, sorted(ranked, reverse=True))

    def test_yaml_text_is_a_scenario_not_a_file_name(self):
        text = "cluster:\n  nodes: 1\n  devices_per_node: 2\n"
        report = dtsim.run(text)
        self.assertEqual(report["devices"], 2)

    def test_an_unknown_engine_is_refused(self):
        with self.assertRaises(dtsim.UserError):
            dtsim.run("scenarios/default.yaml", engine="SimGrid")


class ModelTest(unittest.TestCase):
    def test_model_summary_is_the_executables_table(self):
        out = subprocess.run([DTSIM, "model", "resnet50"], check=True, capture_output=True,
                             text=True, timeout=60).stdout
        m = dtsim.model("resnet50")
        self.assertEqual(m.summary(), out)
        self.assertEqual(m.params, 25557032)  # ResNet-50's 25.56 M (He et al. 2016; torchvision)
        with self.assertRaises(dtsim.UserError):
            dtsim.model("no-such-model")


if __name__ == "__main__":
    unittest.main()
