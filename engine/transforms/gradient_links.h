// Forward <-> backward links: which backward statements a forward statement's gradient rule made,
// and which saved-for-backward values they read.
// Contract: autograd marks each forward statement it differentiated, and each backward statement
// that statement's rule made, with the forward statement's first output (its key,
// BoundSymbol::gradient_of); passes carry the mark with the statement, into fusion regions too, so
// the link holds at every stage after the grad transform. Queries walk every level (subsymbols
// included) and return statements in walk order. Traces that carry no links (Thunder's printouts,
// stages before autograd) answer empty.
#pragma once
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tv {

// The differentiated statement (at any level) of a forward trace marked `key`; null when there is none.
const BoundSymbol* forward_statement(const Trace& forward, const std::string& key);

// The statements (at any level) of a backward trace made by the gradient rule of `key` (marked `key`).
std::vector<const BoundSymbol*> backward_statements(const Trace& backward, const std::string& key);

// The saved-for-backward values (names, in order) that `statements` read: the proxies a backward
// unpacks from C0 and C1.
std::vector<std::string> saved_values_read(const Trace& backward, const std::vector<const BoundSymbol*>& statements);

// Whether any statement of the trace carries a link.
bool has_gradient_links(const Trace&);

// The links of a trace as (walk index, key) pairs, walk order over every level; and back. A capture
// stores these beside the printed text, which has no place for them (parse reproduces the walk).
std::vector<std::pair<size_t, std::string>> gradient_links(const Trace&);
// Throws std::out_of_range when an index is past the trace's statements.
void set_gradient_links(Trace&, const std::vector<std::pair<size_t, std::string>>& links);

}  // namespace tv
