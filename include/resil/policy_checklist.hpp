// resil/policy_checklist.hpp — the parts every policy of resil has, stated
// as concepts; tests/policy_checklist.cpp static_asserts them for every
// policy of the library, so a policy added without one of its parts fails
// the build.
//
//   static_assert(resil::policy_checklist<resil::token_bucket>);
//
// The checklist (docs/pipeline.md, "The parts of every policy"):
//  1. Options: options() returns its options type, an aggregate whose
//     defaults are the documented ones and whose validate() names the first
//     invalid field (resil::validation_result); the constructor throws it.
//  2. One clock rule: `static constexpr resil::time_source time_source`
//     says where its time comes from (resil/clock.hpp). own_clock: it is a
//     basic_X<Clock> with `clock_type` and `clock()`. Any other: it has no
//     clock at all (no clock_type, no clock()), and takes `now` from its
//     driver (caller_now) or reads the call's context (call_context), or
//     reads no time (none).
//  3. metrics(): a policy with state across calls returns a struct of its
//     counts (an aggregate, a snapshot). A policy without any — `static
//     constexpr bool stateless = true`, and copyable, since copies share
//     nothing — has none: its events are what resil::metrics counts.
//  4. Events: all it emits are events of resil::events::all, each with a
//     formatter in resil/fmt.hpp (tests/fmt_events.cpp checks the list
//     against every header's `namespace events` block).
//  5. JSON: its options type has a key table (resil/json/fields.hpp), read
//     and written by resil::json with the same path errors as every other
//     (resil::json::configurable; tests/json_options.cpp). Not part of the
//     concept below: resil::json is a target of its own.
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "validation.hpp"

namespace resil {

/// A policy's options type: what options() returns.
template <class P>
using options_of_t = std::remove_cvref_t<decltype(std::declval<const P&>().options())>;

/// Item 1, the options type alone: an aggregate (designated initializers,
/// defaults in the declaration), copyable, with validate().
template <class O>
concept validated_options = std::is_aggregate_v<O> && std::default_initializable<O> && std::copy_constructible<O> &&
                            requires(const O& o) {
                                { o.validate() } -> std::same_as<validation_result>;
                            };

/// Item 1: options() and a validated_options type.
template <class P>
concept has_validated_options = requires(const P& p) {
    { p.options() } -> std::same_as<const options_of_t<P>&>;
} && validated_options<options_of_t<P>>;

/// Item 2, the policy that says it owns a clock: and has one.
template <class P>
concept owns_its_clock = P::time_source == time_source::own_clock && requires(const P& p) {
    typename P::clock_type;
    requires clock<typename P::clock_type>;
    { p.clock() } -> std::same_as<const typename P::clock_type&>;
};

/// Item 2, the policy that says it owns none: and has none.
template <class P>
concept owns_no_clock = P::time_source != time_source::own_clock && !requires { typename P::clock_type; } &&
                        !requires(const P& p) { p.clock(); };

/// Item 2: a time_source declared, and the shape it names.
template <class P>
concept follows_clock_rule = requires {
    { P::time_source } -> std::convertible_to<time_source>;
} && (owns_its_clock<P> || owns_no_clock<P>);

/// Item 3, a metrics snapshot: a plain struct of counts.
template <class M>
concept metrics_snapshot_type =
    std::is_class_v<M> && std::is_aggregate_v<M> && std::default_initializable<M> && std::copyable<M>;

/// Item 3, a policy with state: metrics() returns a snapshot.
template <class P>
concept reports_metrics = requires(const P& p) { p.metrics(); } &&
                          metrics_snapshot_type<std::remove_cvref_t<decltype(std::declval<const P&>().metrics())>>;

/// Item 3, a policy without state across calls: says so, is copyable (its
/// copies share nothing), and has no metrics() that would count nothing.
template <class P>
concept declared_stateless =
    requires { requires P::stateless; } && std::copyable<P> && !requires(const P& p) { p.metrics(); };

/// Items 1 to 3 (see the banner for 4 and 5).
template <class P>
concept policy_checklist = has_validated_options<P> && follows_clock_rule<P> &&
                           (reports_metrics<P> || declared_stateless<P>);

}  // namespace resil
