// The Python module `_dtsim` (loaded by the package dtsim/ at the
// repository's root): python/api.h's calls, their JSON handed over as text
// for the package to decode, and dtsim's errors as Python exceptions
// carrying the same message `dtsim` prints (file:line:column, what is
// wrong, the hint). Simulations run without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "python/api.h"

namespace py = pybind11;

namespace {

// The exception classes, created once when the module is imported and
// owned by it (module attributes), so no global outlives the interpreter.
struct Errors {
  PyObject* user_error = nullptr;
  PyObject* infeasible_plan = nullptr;
};

// Raises `type` with the error's text and its parts as attributes.
void Raise(PyObject* type, const dtsim::UserError& e) {
  py::object error = py::reinterpret_borrow<py::object>(type)(e.what());
  error.attr("message") = e.message();
  error.attr("hint") = e.hint();
  error.attr("file") = e.where().file;
  error.attr("line") = e.where().line;
  error.attr("column") = e.where().column;
  PyErr_SetObject(type, error.ptr());
}

dtsim::python::ScenarioSource Source(const std::string& path, const std::string& text) {
  return dtsim::python::ScenarioSource{path, text};
}

}  // namespace

PYBIND11_MODULE(_dtsim, m) {
  m.doc() = "dtsim's simulator (use the package `dtsim`, which decodes these calls' JSON)";
  py::object user_error = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("dtsim.UserError",
                                "The input is wrong: its message says where "
                                "(file:line:column), what was expected and how to fix it.",
                                PyExc_ValueError, nullptr));
  py::object infeasible = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "dtsim.InfeasiblePlan",
      "The input is well formed but its plan cannot run (it does not fit in memory, or a split "
      "does not divide).",
      user_error.ptr(), nullptr));
  m.attr("UserError") = user_error;
  m.attr("InfeasiblePlan") = infeasible;
  static Errors errors;  // borrowed from the module's attributes above
  errors = {user_error.ptr(), infeasible.ptr()};
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dtsim::InfeasiblePlan& e) {
      Raise(errors.infeasible_plan, e);
    } catch (const dtsim::UserError& e) {
      Raise(errors.user_error, e);
    }
  });

  m.def(
      "run",
      [](const std::string& path, const std::string& text, const std::string& engine) {
        dtsim::python::RunResult r;
        {
          py::gil_scoped_release release;
          r = dtsim::python::Run(Source(path, text), engine);
        }
        return py::make_tuple(r.report.dump(), r.infeasible);
      },
      py::arg("path"), py::arg("text") = "", py::arg("engine") = "",
      "(report.json text, why the plan cannot run or '')");
  m.def(
      "sweep",
      [](const std::string& path, const std::string& text, int jobs) {
        py::gil_scoped_release release;
        return dtsim::python::Sweep(Source(path, text), jobs).dump();
      },
      py::arg("path"), py::arg("text") = "", py::arg("jobs") = 0);
  m.def(
      "search",
      [](const std::string& path, const std::string& text, std::vector<int> devices,
         std::vector<int> micro_batch_sizes, std::vector<int> zero_stages,
         std::vector<int> tensor_parallel, int jobs, int top) {
        const dtsim::python::SearchArgs args{std::move(devices), std::move(micro_batch_sizes),
                                             std::move(zero_stages), std::move(tensor_parallel),
                                             jobs, top};
        py::gil_scoped_release release;
        return dtsim::python::Search(Source(path, text), args).dump();
      },
      py::arg("path"), py::arg("text") = "", py::arg("devices") = std::vector<int>{},
      py::arg("micro_batch_sizes") = std::vector<int>{}, py::arg("zero_stages") = std::vector<int>{},
      py::arg("tensor_parallel") = std::vector<int>{}, py::arg("jobs") = 0, py::arg("top") = 10);
  m.def(
      "model",
      [](const std::string& name) {
        py::gil_scoped_release release;
        return dtsim::python::Model(name).dump();
      },
      py::arg("name"));
}
