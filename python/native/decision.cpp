#include "decision.hpp"

#include <structmember.h>

#include <cstddef>
#include <cstdint>

#include "convert.hpp"
#include "errors.hpp"
#include "ratewarden/errors.hpp"

namespace ratewarden::python {
namespace {

// The member slots below read the fields in place with these C types.
static_assert(sizeof(bool) == sizeof(char), "T_BOOL reads a char");
static_assert(sizeof(long long) == sizeof(int64_t), "T_LONGLONG reads a long long");
static_assert(sizeof(int) == sizeof(int32_t), "T_INT reads an int");

struct DecisionObject {
  PyObject_HEAD
  Decision d;
};

PyTypeObject* decision_type = nullptr;

Decision& fields(PyObject* self) { return reinterpret_cast<DecisionObject*>(self)->d; }

double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

// Decision(*, allowed, limit, remaining, reset_after_us, retry_after_us, used, policy_index=0, wait_us=0, ticket=0).
PyObject* decision_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"allowed", "limit",        "remaining", "reset_after_us", "retry_after_us",
                                "used",    "policy_index", "wait_us",   "ticket",         nullptr};
  PyObject* values[9] = {};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOOOOO:Decision", const_cast<char**>(names), &values[0],
                                   &values[1], &values[2], &values[3], &values[4], &values[5], &values[6],
                                   &values[7], &values[8]))
    return nullptr;
  for (int i = 0; i < 6; ++i) {
    if (values[i] == nullptr)
      return PyErr_Format(PyExc_TypeError, "Decision() missing required keyword argument: '%s'", names[i]);
  }
  try {
    Decision d;
    const int allowed = PyObject_IsTrue(values[0]);
    if (allowed < 0) return nullptr;
    d.allowed = allowed != 0;
    d.limit = to_int64(values[1], "limit");
    d.remaining = to_int64(values[2], "remaining");
    d.reset_after_us = to_int64(values[3], "reset_after_us");
    d.retry_after_us = to_int64(values[4], "retry_after_us");
    d.used = to_int64(values[5], "used");
    if (values[6] != nullptr) {
      const int64_t index = to_int64(values[6], "policy_index");
      if (index < INT32_MIN || index > INT32_MAX) throw InvalidArgument("policy_index is out of range");
      d.policy_index = static_cast<int32_t>(index);
    }
    if (values[7] != nullptr) d.wait_us = to_int64(values[7], "wait_us");
    if (values[8] != nullptr) d.ticket = to_int64(values[8], "ticket");
    PyObject* self = type->tp_alloc(type, 0);
    if (self != nullptr) fields(self) = d;
    return self;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

void decision_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

// Every field, as the constructor names them (in seconds where it reads seconds); a reservation's wait and ticket
// only for a reservation, whose wait comes first (what its caller acts on).
PyObject* decision_repr(PyObject* self) {
  const Decision& d = fields(self);
  const bool reservation = d.wait_us != 0 || d.ticket != 0;
  PyObject* wait = PyFloat_FromDouble(seconds(d.wait_us));
  PyObject* reset_after = PyFloat_FromDouble(seconds(d.reset_after_us));
  PyObject* retry_after = PyFloat_FromDouble(seconds(d.retry_after_us));
  PyObject* text = nullptr;
  if (wait != nullptr && reset_after != nullptr && retry_after != nullptr) {
    PyObject* head = reservation ? PyUnicode_FromFormat(", wait=%R", wait) : PyUnicode_FromString("");
    PyObject* tail = reservation ? PyUnicode_FromFormat(", ticket=%lld", static_cast<long long>(d.ticket))
                                 : PyUnicode_FromString("");
    if (head != nullptr && tail != nullptr)
      text = PyUnicode_FromFormat(
          "Decision(allowed=%s%U, limit=%lld, remaining=%lld, reset_after=%R, retry_after=%R, used=%lld, "
          "policy_index=%d%U)",
          d.allowed ? "True" : "False", head, static_cast<long long>(d.limit), static_cast<long long>(d.remaining),
          reset_after, retry_after, static_cast<long long>(d.used), static_cast<int>(d.policy_index), tail);
    Py_XDECREF(head);
    Py_XDECREF(tail);
  }
  Py_XDECREF(wait);
  Py_XDECREF(reset_after);
  Py_XDECREF(retry_after);
  return text;
}

// Equality and the hash cover every field, policy_index included (the core's operator==): two decisions that report
// different policies of a limiter are different answers, even with the same numbers.
Py_hash_t decision_hash(PyObject* self) {
  const Decision& d = fields(self);
  PyObject* all = Py_BuildValue("(NLLLLLiLL)", PyBool_FromLong(d.allowed), static_cast<long long>(d.limit),
                                static_cast<long long>(d.remaining), static_cast<long long>(d.reset_after_us),
                                static_cast<long long>(d.retry_after_us), static_cast<long long>(d.used),
                                static_cast<int>(d.policy_index), static_cast<long long>(d.wait_us),
                                static_cast<long long>(d.ticket));
  if (all == nullptr) return -1;
  const Py_hash_t hash = PyObject_Hash(all);
  Py_DECREF(all);
  return hash;
}

PyObject* decision_richcompare(PyObject* self, PyObject* other, int op) {
  const Decision* o = decision_of(other);
  if (o == nullptr || (op != Py_EQ && op != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
  return PyBool_FromLong((fields(self) == *o) == (op == Py_EQ));
}

int decision_bool(PyObject* self) { return fields(self).allowed ? 1 : 0; }

PyObject* reset_after(PyObject* self, void*) { return PyFloat_FromDouble(seconds(fields(self).reset_after_us)); }
PyObject* retry_after(PyObject* self, void*) { return PyFloat_FromDouble(seconds(fields(self).retry_after_us)); }
PyObject* wait(PyObject* self, void*) { return PyFloat_FromDouble(seconds(fields(self).wait_us)); }

#define RW_FIELD(name, type, doc) \
  {const_cast<char*>(#name), type, offsetof(DecisionObject, d) + offsetof(Decision, name), READONLY, \
   const_cast<char*>(doc)}

PyMemberDef members[] = {
    RW_FIELD(allowed, T_BOOL, "True when the call was allowed (and, for hit, charged)."),
    RW_FIELD(limit, T_LONGLONG, "The capacity of the policy reported."),
    RW_FIELD(remaining, T_LONGLONG, "What is left after this call."),
    RW_FIELD(used, T_LONGLONG, "What is consumed in the current window or bucket."),
    RW_FIELD(reset_after_us, T_LONGLONG, "Microseconds until the key is back to full quota."),
    RW_FIELD(retry_after_us, T_LONGLONG, "0 when allowed; else the microseconds after which the call is allowed."),
    RW_FIELD(policy_index, T_INT,
             "The policy this decision reports: its index (from 0) in the limiter's policy string."),
    RW_FIELD(wait_us, T_LONGLONG, "A reservation's: microseconds to wait before using the slot (0: now)."),
    RW_FIELD(ticket, T_LONGLONG, "A reservation's: what cancel needs to give the slot back (0: it cannot be)."),
    {nullptr, 0, 0, 0, nullptr},
};

#undef RW_FIELD

PyGetSetDef properties[] = {
    {const_cast<char*>("reset_after"), reset_after, nullptr,
     const_cast<char*>("Seconds until the key is back to full quota (reset_after_us / 1e6)."), nullptr},
    {const_cast<char*>("retry_after"), retry_after, nullptr,
     const_cast<char*>("0 when allowed; else the seconds after which the call is allowed (retry_after_us / 1e6)."),
     nullptr},
    {const_cast<char*>("wait"), wait, nullptr,
     const_cast<char*>("A reservation's: seconds to wait before using the slot (wait_us / 1e6; 0: now)."), nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot slots[] = {
    {Py_tp_doc, const_cast<char*>(
                    "Decision(*, allowed, limit, remaining, reset_after_us, retry_after_us, used, policy_index=0, "
                    "wait_us=0, ticket=0)\n"
                    "--\n\nThe answer to one hit, peek or reserve; truthy when allowed.")},
    {Py_tp_new, reinterpret_cast<void*>(decision_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(decision_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(decision_repr)},
    {Py_tp_hash, reinterpret_cast<void*>(decision_hash)},
    {Py_tp_richcompare, reinterpret_cast<void*>(decision_richcompare)},
    {Py_nb_bool, reinterpret_cast<void*>(decision_bool)},
    {Py_tp_members, members},
    {Py_tp_getset, properties},
    {0, nullptr},
};

PyType_Spec spec = {"ratewarden._native.Decision", sizeof(DecisionObject), 0,
                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};

}  // namespace

PyObject* new_decision(const Decision& d) {
  DecisionObject* self = PyObject_New(DecisionObject, decision_type);
  if (self == nullptr) return nullptr;
  self->d = d;
  return reinterpret_cast<PyObject*>(self);
}

const Decision* decision_of(PyObject* o) {
  return PyObject_TypeCheck(o, decision_type) ? &fields(o) : nullptr;
}

void bind_decision(py::module_& m) {
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  decision_type = reinterpret_cast<PyTypeObject*>(type);  // never released: the type lives as long as the process
  m.add_object("Decision", type);
}

}  // namespace ratewarden::python
