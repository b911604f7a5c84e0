// X-macro helpers for enumerations whose enumerators and operator-facing
// names are written once, in one list next to the enum (the pattern of
// common/drop_reasons.h and common/verbs.h):
//
//   // X(enumerator, "name")
//   #define IWARP_FOO_STATUSES(X)  (each line but the last ends in a backslash)
//     X(kOk, "ok")
//     X(kBad, "foo_bad")  /* what went wrong */
//   enum class FooStatus : uint8_t { IWARP_FOO_STATUSES(IWARP_ENUMERATOR) };
//
//   std::string_view FooStatusName(FooStatus s) {
//     using Enum = FooStatus;
//     switch (s) { IWARP_FOO_STATUSES(IWARP_ENUM_NAME_CASE) }
//     return "invalid";
//   }
//
// Lists whose enumerators carry explicit (wire) values take the value as a
// column, X(enumerator, value, "name"), and use the _VALUE variants.
#ifndef IWARPD_COMMON_ENUM_NAMES_H_
#define IWARPD_COMMON_ENUM_NAMES_H_

#define IWARP_ENUMERATOR(e, name) e,
#define IWARP_ENUMERATOR_VALUE(e, value, name) e = value,

// One `case Enum::e: return name;` per list entry; `Enum` is an alias the
// name function declares for its enum type.
#define IWARP_ENUM_NAME_CASE(e, name) \
  case Enum::e:                       \
    return name;
#define IWARP_ENUM_NAME_CASE_VALUE(e, value, name) \
  case Enum::e:                                    \
    return name;

#endif  // IWARPD_COMMON_ENUM_NAMES_H_
