// taot._native, part 4: the Python types of a kernel and of a bound launcher (vectorcall objects)
// and their methods.
#pragma once

#include "timing_call.h"

namespace taot::python::detail {
// C++ exceptions as Python errors, for the functions Python calls directly.
template <class Body>
PyObject* guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (nb::python_error& error) {
    error.restore();
  } catch (const nb::builtin_exception& error) {
    PyObject* type = PyExc_RuntimeError;
    switch (error.type()) {
      case nb::exception_type::type_error: type = PyExc_TypeError; break;
      case nb::exception_type::value_error: type = PyExc_ValueError; break;
      case nb::exception_type::index_error: type = PyExc_IndexError; break;
      case nb::exception_type::key_error: type = PyExc_KeyError; break;
      case nb::exception_type::attribute_error: type = PyExc_AttributeError; break;
      default: break;
    }
    PyErr_SetString(type, error.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

// The Python objects: a kernel (<lib>.<kernel>) and a bound launcher (<lib>.<kernel>.bind(...)),
// both called through vectorcall.
struct KernelObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  KernelBinding* binding;  // lives as long as the process
};

struct BoundObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  BoundLauncher* launcher;  // owned
};

inline KernelBinding& binding_of(PyObject* self) { return *reinterpret_cast<KernelObject*>(self)->binding; }
inline BoundLauncher& launcher_of(PyObject* self) { return *reinterpret_cast<BoundObject*>(self)->launcher; }

template <class Function>
PyCFunction as_method(Function function) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

inline PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return guarded([&] {
    return kernel_call(binding_of(self), args, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)), kwnames,
                       CallMode::launch);
  });
}

inline PyObject* kernel_choose(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    return kernel_call(binding_of(self), args, static_cast<std::size_t>(nargs), kwnames, CallMode::choose);
  });
}

inline PyObject* kernel_warmup(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    return kernel_call(binding_of(self), args, static_cast<std::size_t>(nargs), kwnames, CallMode::warmup);
  });
}

inline PyObject* kernel_set_autotune(PyObject* self, PyObject* on) {
  return guarded([&]() -> PyObject* {
    if (on != Py_None && !PyBool_Check(on))
      throw nb::type_error((binding_of(self).name + ".set_autotune(): takes True, False or None (the process's "
                                                    "setting), got " + nb::type_name(nb::handle(on).type()).c_str())
                               .c_str());
    Status status = binding_of(self).kernel.set_autotune(on == Py_None ? std::nullopt : std::optional<bool>(on == Py_True));
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* kernel_reset_autotune(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    Status status = binding_of(self).kernel.reset_autotune();
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* kernel_time(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    KernelBinding& binding = binding_of(self);
    const TimingCall timing(binding, args, static_cast<std::size_t>(nargs), kwnames);
    return kernel_call(binding, timing.values.data(), static_cast<std::size_t>(nargs), timing.kwnames(),
                       CallMode::time, &timing.options);
  });
}

inline PyTypeObject* bound_type();

inline PyObject* bound_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return guarded([&] {
    return bound_call(launcher_of(self), args, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)), kwnames,
                      CallMode::launch);
  });
}

inline PyObject* kernel_bind(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    std::unique_ptr<BoundLauncher> launcher =
        bind_launcher(self, binding_of(self), static_cast<std::size_t>(nargs), args + nargs, kwnames);
    PyTypeObject* type = bound_type();
    PyObject* object = type->tp_alloc(type, 0);
    if (object == nullptr) throw nb::python_error();
    auto* bound = reinterpret_cast<BoundObject*>(object);
    bound->vectorcall = bound_vectorcall;
    bound->launcher = launcher.release();
    return object;
  });
}

inline PyObject* kernel_variants(PyObject* self, PyObject*);

inline PyObject* kernel_load_tuning(PyObject* self, PyObject* args, PyObject* kwargs) {
  return guarded([&]() -> PyObject* {
    static const char* keywords[] = {"path", "device", nullptr};
    PyObject* path = nullptr;
    PyObject* device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:load_tuning", const_cast<char**>(keywords), &path, &device))
      return nullptr;
    nb::object file = nb::steal(PyOS_FSPath(path));
    if (!file.is_valid()) throw nb::python_error();
    nb::object bytes = PyBytes_Check(file.ptr()) ? file : nb::steal(PyUnicode_EncodeFSDefault(file.ptr()));
    if (!bytes.is_valid()) throw nb::python_error();
    std::string device_name;
    if (device != Py_None) {
      if (!PyUnicode_Check(device))
        throw nb::type_error((binding_of(self).name + ".load_tuning(): device= takes a str (the GPU's name) or None, got " +
                              nb::type_name(nb::handle(device).type()).c_str()).c_str());
      device_name = nb::cast<std::string>(nb::handle(device));
    }
    Status status = binding_of(self).kernel.load_tuning(std::string(PyBytes_AS_STRING(bytes.ptr()),
                                                                    static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.ptr()))),
                                                        device_name);
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* kernel_reset_tuning(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    Status status = binding_of(self).kernel.reset_tuning();
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* bound_choose(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    return bound_call(launcher_of(self), args, static_cast<std::size_t>(nargs), kwnames, CallMode::choose);
  });
}

inline PyObject* bound_time(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    BoundLauncher& launcher = launcher_of(self);
    const TimingCall timing(launcher.binding, args, static_cast<std::size_t>(nargs), kwnames);
    return bound_call(launcher, timing.values.data(), static_cast<std::size_t>(nargs), timing.kwnames(),
                      CallMode::time, &timing.options);
  });
}

// time()'s docstring, for a kernel (`call_keywords`: "stream=None, variant=None, grid=None,
// **config") or a bound launcher ("stream=None, grid=None").
inline std::string time_doc(const std::string& call_keywords) {
  return "time(*args, " + timing_signature() + ", " + call_keywords +
         ")\n--\n\n"
         "Times launches with these arguments (as a call takes them) in C++, without Python between "
         "launches: warm-up for warmup_ms of GPU time, then `reps` timed reps (0: as many as fit in rep_ms), "
         "each of launches_per_rep launches (or one CUDA-graph replay of them, graph=True) between two CUDA "
         "events, the L2 flushed before every rep (flush_l2) outside the events. Returns a dict: ms (per "
         "launch, one per rep), min, p20, median, p80, max, mean, reps, warmup_reps, warmup_ms, flush_bytes, "
         "variant and step. Releases the GIL while it times; the stream must not be capturing.";
}

// Objects live as long as their module; a bound launcher owns its C++ state.
inline void object_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

inline void bound_dealloc(PyObject* self) {
  delete reinterpret_cast<BoundObject*>(self)->launcher;
  object_dealloc(self);
}

inline PyObject* text_object(const std::string& text) { return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size())); }

// The config a launcher was bound with: {field: value} for the fields bind() set.
inline nb::dict bound_config(const BoundLauncher& launcher) {
  nb::dict config;
  for (std::size_t f = 0; f < launcher.values.size(); ++f)
    if (launcher.values[f].is_valid()) config[launcher.binding.table.fields[f].name] = launcher.values[f];
  return config;
}

inline PyObject* bound_repr(PyObject* self) {
  return guarded([&] {
    const BoundLauncher& launcher = launcher_of(self);
    std::string text = "<" + launcher.binding.name + ".bind(";
    if (launcher.has_variant) text += "variant=" + std::to_string(launcher.variant);
    bool first = true;
    for (auto [name, value] : bound_config(launcher)) {
      text += (first ? "" : ", ") + std::string(nb::str(name).c_str()) + "=" + nb::repr(value).c_str();
      first = false;
    }
    return text_object(text + ")>");
  });
}

#if PY_VERSION_HEX < 0x030C0000
#define TAOT_PY_T_PYSSIZET T_PYSSIZET
#define TAOT_PY_READONLY READONLY
#else
#define TAOT_PY_T_PYSSIZET Py_T_PYSSIZET
#define TAOT_PY_READONLY Py_READONLY
#endif

// A callable heap type (vectorcall at `vectorcall_offset`), made once per module; instances are
// made by this header only. `methods` and `attributes` must live as long as the type.
inline PyTypeObject* make_type(const char* name, std::size_t size, std::size_t vectorcall_offset, destructor dealloc,
                               reprfunc repr, PyMethodDef* methods, PyGetSetDef* attributes) {
  PyMemberDef members[] = {  // copied into the type
      {"__vectorcalloffset__", TAOT_PY_T_PYSSIZET, static_cast<Py_ssize_t>(vectorcall_offset), TAOT_PY_READONLY,
       nullptr},
      {nullptr, 0, 0, 0, nullptr}};
  PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                         {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
                         {Py_tp_repr, reinterpret_cast<void*>(repr)},
                         {Py_tp_members, members},
                         {Py_tp_methods, methods},
                         {Py_tp_getset, attributes},
                         {0, nullptr}};
  unsigned long flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
  flags |= Py_TPFLAGS_DISALLOW_INSTANTIATION;
#endif
  PyType_Spec spec{name, static_cast<int>(size), 0, static_cast<unsigned int>(flags), slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw nb::python_error();
#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
  reinterpret_cast<PyTypeObject*>(type)->tp_new = nullptr;
#endif
  return reinterpret_cast<PyTypeObject*>(type);
}

inline PyTypeObject* kernel_type() {
  static PyTypeObject* const type = [] {
    static const std::string time_text = time_doc("stream=None, variant=None, grid=None, **config");
    static PyMethodDef methods[] = {
        {"bind", as_method(kernel_bind), METH_FASTCALL | METH_KEYWORDS,
         "bind(*, variant=None, **config)\n--\n\n"
         "A launcher with this config (or variant) resolved once and checked against what was compiled: "
         "call it as the kernel, with stream= and grid= only. The variant is still chosen at every call "
         "from the arguments."},
        {"choose", as_method(kernel_choose), METH_FASTCALL | METH_KEYWORDS,
         "choose(*args, stream=None, variant=None, grid=None, **config)\n--\n\n"
         "(variant index, step) of the launch these arguments would make, without launching: the index "
         "into variants(), and how the config was chosen: 'variant', 'config', 'table', 'heuristics', "
         "'default' or 'autotuned at first call' (a key not tuned yet says the step its launch would take "
         "without tuning)."},
        {"time", as_method(kernel_time), METH_FASTCALL | METH_KEYWORDS, time_text.c_str()},
        {"variants", as_method(kernel_variants), METH_NOARGS,
         "variants()\n--\n\nThe compiled variants, as <kernel>_variants() lists them."},
        {"load_tuning", as_method(kernel_load_tuning), METH_VARARGS | METH_KEYWORDS,
         "load_tuning(path, device=None)\n--\n\n"
         "Reads a tuned table (taot's format or vLLM's) and uses it in place of this kernel's table for the "
         "same device; `device` overrides the GPU name the file gives."},
        {"reset_tuning", as_method(kernel_reset_tuning), METH_NOARGS,
         "reset_tuning()\n--\n\nDrops the tables load_tuning() loaded: the ones built into the library apply again."},
        {"warmup", as_method(kernel_warmup), METH_FASTCALL | METH_KEYWORDS,
         "warmup(*args, stream=None, grid=None, **config)\n--\n\n"
         "First-call autotuning ahead of time (before a CUDA graph capture, say): times the configs for the "
         "key of these arguments as their first launch would, on their memory, and returns (variant index, "
         "step) of the launch they make now."},
        {"set_autotune", as_method(kernel_set_autotune), METH_O,
         "set_autotune(on)\n--\n\nFirst-call autotuning for this kernel: True, False, or None for the "
         "process's setting (set_autotune() of the module, $TAOT_AUTOTUNE)."},
        {"reset_autotune", as_method(kernel_reset_autotune), METH_NOARGS,
         "reset_autotune()\n--\n\nForgets this kernel's first-call results in this process: each key is "
         "tuned again at its next launch."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef attributes[] = {
        {"__doc__", [](PyObject* self, void*) { return text_object(binding_of(self).doc); }, nullptr, nullptr, nullptr},
        {"__name__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.name); }, nullptr,
         nullptr, nullptr},
        {"__qualname__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.name); },
         nullptr, nullptr, nullptr},
        {"__module__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.library); },
         nullptr, nullptr, nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    const reprfunc repr = [](PyObject* self) {
      return guarded([&] { return text_object("<taot kernel " + binding_of(self).name + ">"); });
    };
    return make_type("taot.Kernel", sizeof(KernelObject), offsetof(KernelObject, vectorcall), object_dealloc, repr,
                     methods, attributes);
  }();
  return type;
}

inline PyTypeObject* bound_type() {
  static PyTypeObject* const type = [] {
    static const std::string time_text = time_doc("stream=None, grid=None");
    static PyMethodDef methods[] = {
        {"choose", as_method(bound_choose), METH_FASTCALL | METH_KEYWORDS,
         "choose(*args, stream=None, grid=None)\n--\n\n"
         "(variant index, step) of the launch a call with these arguments would make, without launching."},
        {"time", as_method(bound_time), METH_FASTCALL | METH_KEYWORDS, time_text.c_str()},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef attributes[] = {
        {"config", [](PyObject* self, void*) { return guarded([&] { return bound_config(launcher_of(self)).release().ptr(); }); },
         nullptr, "The config keywords given to bind() (None ones left out).", nullptr},
        {"variant", [](PyObject* self, void*) -> PyObject* {
           const BoundLauncher& launcher = launcher_of(self);
           if (!launcher.has_variant) Py_RETURN_NONE;
           return PyLong_FromSize_t(launcher.variant);
         }, nullptr, "The variant index given to bind(), or None.", nullptr},
        {"kernel", [](PyObject* self, void*) { return launcher_of(self).kernel.inc_ref().ptr(); }, nullptr,
         "The kernel this launcher launches.", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    return make_type("taot.BoundKernel", sizeof(BoundObject), offsetof(BoundObject, vectorcall), bound_dealloc,
                     bound_repr, methods, attributes);
  }();
  return type;
}

}  // namespace taot::python::detail
