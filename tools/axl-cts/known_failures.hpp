// What backends declare about themselves to the conformance suite.
//
// Two kinds of entry, both keyed by backend name and case name:
//
//  - not_supported: permanent. The backend will never do this (a design
//    decision, not a bug). The case is not run and counts as "unsupported"
//    with the reason. Prefer a NULL table slot where one exists: the suite
//    then finds out by itself. This table is for behaviour no slot captures.
//
//  - known_failure: temporary. A bug someone is fixing. The case is not run
//    and counts as "skip" with the reason, so the report stays honest and
//    the exit status clean. `axl-cts --run-known-failures` runs it anyway:
//    a failure then counts as "known_failure", a pass counts as a failure
//    ("unexpected pass"), so a fixed bug forces its entry out of this table.
//
// Every entry says why, and for a known failure where the fix belongs.
#pragma once

#include <string>
#include <vector>

namespace cts {

struct KnownIssue {
  enum Kind { not_supported, known_failure };
  const char* backend;
  const char* case_name;
  Kind kind;
  const char* reason;
};

inline const std::vector<KnownIssue>& known_issues() {
  // A backend's entry looks like
  //   {"acme", "cts.queue.in_order", KnownIssue::known_failure, "why, and the bug link"}
  static const std::vector<KnownIssue> table = {
  };
  return table;
}

inline const KnownIssue* find_known_issue(const std::string& backend,
                                          const std::string& case_name) {
  for (const KnownIssue& k : known_issues())
    if (backend == k.backend && case_name == k.case_name) return &k;
  return nullptr;
}

}  // namespace cts
