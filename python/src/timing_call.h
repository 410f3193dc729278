// taot._native, part 3: time(), a call's own keywords plus taot/timing.h's timing options.
#pragma once

#include "calls.h"

namespace taot::python::detail {
// ---------------------------------------------------------------------------------------------
// time(): the call's own keywords plus the timing options of taot/timing.h (TAOT_TIMING_OPTIONS,
// same names and defaults), which are taken out before the call's keywords are read as usual.
// ---------------------------------------------------------------------------------------------

inline void read_timing_value(nb::handle item, double& value, const std::string& what) {
  value = PyFloat_AsDouble(item.ptr());
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error((what + " takes a number, got " + nb::type_name(item.type()).c_str()).c_str());
  }
}
inline void read_timing_value(nb::handle item, std::int64_t& value, const std::string& what) {
  value = int64_of(item, [&] { return what; });
}
inline void read_timing_value(nb::handle item, bool& value, const std::string& what) {
  const int truth = PyObject_IsTrue(item.ptr());
  if (truth < 0) {
    PyErr_Clear();
    throw nb::type_error((what + " takes a bool, got " + nb::type_name(item.type()).c_str()).c_str());
  }
  value = truth != 0;
}

// A timing option as Python writes its default ("25", "True").
inline std::string python_default(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}
inline std::string python_default(std::int64_t value) { return std::to_string(value); }
inline std::string python_default(bool value) { return value ? "True" : "False"; }

// The timing keywords, interned once, each with how it sets its option.
struct TimingKeyword {
  nb::object name;
  void (*read)(nb::handle value, TimingOptions& options, const std::string& call);
};

inline const std::vector<TimingKeyword>& timing_keywords() {
  static const std::vector<TimingKeyword>* const keywords = [] {
    auto* list = new std::vector<TimingKeyword>();  // lives as long as the process
#define TAOT_TIMING_KEYWORD(type, name, default_value)                                         \
  list->push_back(TimingKeyword{nb::steal(interned(#name)),                                   \
                                [](nb::handle value, TimingOptions& options, const std::string& call) { \
                                  read_timing_value(value, options.name, call + ": " #name "="); \
                                }});
    TAOT_TIMING_OPTIONS(TAOT_TIMING_KEYWORD)
#undef TAOT_TIMING_KEYWORD
    return list;
  }();
  return *keywords;
}

// "warmup_ms=25, reps=0, ...": the timing keywords as time()'s signature shows them.
inline std::string timing_signature() {
  std::string text;
  const TimingOptions defaults;
#define TAOT_TIMING_SIGNATURE(type, name, default_value) \
  text += std::string(text.empty() ? "" : ", ") + #name "=" + python_default(defaults.name);
  TAOT_TIMING_OPTIONS(TAOT_TIMING_SIGNATURE)
#undef TAOT_TIMING_SIGNATURE
  return text;
}

// A time() call: the timing keywords read into `options`, the other arguments and keywords laid
// out again as vectorcall passes them (arguments, then the remaining keywords' values, named by
// `names`), for the call path every launch takes. A keyword that is neither a timing keyword nor
// one of the kernel's is refused here, naming both lists.
struct TimingCall {
  TimingOptions options;
  std::vector<PyObject*> values;
  nb::object names;  // a tuple, or null when no other keyword is left

  TimingCall(const KernelBinding& binding, PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
    const std::string call = binding.name + ".time()";
    values.assign(args, args + nargs);
    const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
    std::vector<PyObject*> kept;
    for (std::size_t k = 0; k < count; ++k) {
      PyObject* keyword = PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k));
      const TimingKeyword* timing = find(keyword);
      if (timing != nullptr) {
        if (args[nargs + k] != Py_None) timing->read(nb::handle(args[nargs + k]), options, call);
        continue;
      }
      if (binding.find_slot(keyword) == kUnknownKeyword) {
        std::string known;
        for (const TimingKeyword& entry : timing_keywords()) known += std::string(known.empty() ? "" : ", ") + nb::str(entry.name).c_str();
        for (const auto& entry : binding.keywords) known += std::string(", ") + nb::str(entry.first).c_str();
        throw nb::type_error((call + ": unknown keyword '" + nb::str(keyword).c_str() + "'; the keywords are: " +
                              known).c_str());
      }
      kept.push_back(keyword);
      values.push_back(args[nargs + k]);
    }
    names = keyword_names(kept);
  }
  PyObject* kwnames() const noexcept { return names.is_valid() ? names.ptr() : nullptr; }

 private:
  static const TimingKeyword* find(PyObject* keyword) {
    for (const TimingKeyword& timing : timing_keywords())
      if (timing.name.ptr() == keyword) return &timing;
    for (const TimingKeyword& timing : timing_keywords())  // a name made at run time: compare the text
      if (PyUnicode_Compare(keyword, timing.name.ptr()) == 0) return &timing;
    return nullptr;
  }
};

}  // namespace taot::python::detail
