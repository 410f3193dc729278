// What a generated Python module hands to taot's one Python binding (the extension module
// taot._native, built once with taot): the library's name and its kernels' tables. The module
// holds data only; the binding makes the kernel objects and runs them on the process's one runtime
// (module cache, scratch, profiler, tuned tables), however many taot libraries a program imports.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

#include "taot/c_api.h"
#include "taot/kernel_table.h"

extern "C" {

// A generated library as its Python module registers it. `abi_version` is the TAOT_ABI_VERSION
// the module was compiled with: the binding refuses any other, naming both. Everything it points
// to lives as long as the process (constant tables in the module, which Python never unloads).
typedef struct taot_python_library {
  uint32_t abi_version;
  const char* name;  // the module's name, also the spec's library name
  const taot::table::KernelTable* const* tables;
  size_t table_count;
} taot_python_library;

// The binding's entry point, published as the capsule taot._native.make_module: a new module
// object named library->name, or null with a Python exception set.
typedef PyObject* (*taot_python_make_module)(const taot_python_library* library);

}  // extern "C"

namespace taot::python {

inline constexpr const char* kMakeModuleCapsule = "taot._native.make_module";

// The body of a generated module's PyInit_<library>: imports taot._native and asks it for the
// module. Fails (ImportError) naming what is missing when taot's binding cannot be imported.
inline PyObject* module_of(const taot_python_library& library) {
  // PyCapsule_Import imports only the first component of the name: import the submodule first.
  PyObject* binding = PyImport_ImportModule("taot._native");
  void* entry = binding != nullptr ? PyCapsule_Import(kMakeModuleCapsule, 0) : nullptr;
  Py_XDECREF(binding);
  if (entry == nullptr) {
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* cause = value != nullptr ? PyObject_Str(value) : nullptr;
    const char* cause_text = cause != nullptr ? PyUnicode_AsUTF8(cause) : nullptr;
    PyErr_Clear();
    PyErr_Format(PyExc_ImportError,
                 "the taot library %s needs taot's Python binding, taot._native, which this Python cannot import "
                 "(%s): install taot (pip install taot) or build it (scripts/build.sh) and put its python/ folder "
                 "on PYTHONPATH",
                 library.name, cause_text != nullptr ? cause_text : "no reason given");
    Py_XDECREF(cause);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    return nullptr;
  }
  return reinterpret_cast<taot_python_make_module>(entry)(&library);
}

}  // namespace taot::python
