// resil/any_pipeline.hpp — a pipeline whose policies are hidden behind its
// result type, so it can be a class member, a function parameter or an
// element of a map without spelling out every policy type.
//
//   class orders_client {
//   public:
//       explicit orders_client(resil::circuit_breaker& breaker)
//           : pipe_(resil::pipeline(resil::deadline_policy{250ms}, resil::retry_policy{}, std::ref(breaker)),
//                   classify_reply) {}
//       resil::outcome<reply> get(int id) {
//           return pipe_([&](resil::context& ctx) { return http_get(id, ctx); });
//       }
//   private:
//       resil::any_pipeline<reply> pipe_;   // one allocation, when built
//   };
//
// The pipeline and its classifier are stored together in one allocation when
// the any_pipeline is made; a call allocates nothing (the callable is passed
// by reference, not stored) and costs one indirect call more than the
// pipeline itself. Copies share the same pipeline: policies held by value
// are immutable and safe to call from several threads at once, shared-state
// policies are held by reference as in any pipeline. To keep the concrete
// type instead, see "A pipeline as a class member" in docs/pipeline.md
// (decltype of a factory function).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "context.hpp"
#include "outcome.hpp"
#include "pipeline.hpp"

namespace resil {

namespace detail {

/// A non-owning reference to a callable taking the context (or nothing) and
/// returning R: two pointers, never allocates. Valid while the callable lives.
template <class R, class Clock>
class callable_ref {
public:
    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, callable_ref>)
    explicit callable_ref(F& f) noexcept
        : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* object, basic_context<Clock>& ctx) -> R {
              return detail::invoke_callable(*static_cast<F*>(object), ctx);
          }) {}

    R operator()(basic_context<Clock>& ctx) const { return call_(object_, ctx); }

private:
    void* object_;
    R (*call_)(void*, basic_context<Clock>&);
};

}  // namespace detail

/// A type-erased pipeline for callables returning R, on clock `Clock`.
/// Made from any resil::pipeline(...) (and optionally its classifier); calls
/// return resil::outcome<R> (resil::outcome<resil::unit> for R = void).
/// Copyable (copies share the pipeline); const calls are thread-safe when the
/// pipeline's are.
template <class R, clock Clock = steady_clock>
class any_pipeline {
public:
    /// What the callable returns (R).
    using result_type = R;
    /// The value a successful call yields: R, or T for an R that is an
    /// outcome<T>.
    using value_type = detail::value_of_t<R>;
    /// What a call through the pipeline returns: outcome<value_type>.
    using outcome_type = outcome<value_type>;
    /// The clock of the pipelines it can hold.
    using clock_type = Clock;

    /// Takes `pipeline` and the classifier its calls use (by default the
    /// pipeline's own: `classify(const R&)` found by ADL, or none for void).
    /// One allocation, here.
    template <class Pipeline, class Classifier = detail::default_classifier>
        requires(!std::is_same_v<std::remove_cvref_t<Pipeline>, any_pipeline>)
    any_pipeline(Pipeline pipeline, Classifier classify = {})  // NOLINT: implicit, like std::function
        : impl_(std::make_shared<const model<Pipeline, Classifier>>(std::move(pipeline), std::move(classify))) {
        static_assert(std::is_same_v<typename Pipeline::clock_type, Clock>,
                      "resil: this pipeline runs on another clock; write resil::any_pipeline<R, ThatClock>");
    }

    /// Runs `fn` (taking `resil::basic_context<Clock>&` or nothing, returning
    /// R) through the pipeline with a fresh context. Allocates nothing.
    template <class F>
    outcome_type operator()(F&& fn) const {
        check_callable<F>();
        return impl_->run(detail::callable_ref<R, Clock>(fn));
    }

    /// Runs `fn` with a context the caller prepared, as basic_pipeline::execute.
    template <class F>
    outcome_type execute(basic_context<Clock>& ctx, F&& fn) const {
        check_callable<F>();
        return impl_->run(ctx, detail::callable_ref<R, Clock>(fn));
    }

    /// The pipeline's clock.
    [[nodiscard]] const Clock& clock() const noexcept { return impl_->clock(); }

private:
    template <class F>
    static constexpr void check_callable() noexcept {
        using returned = detail::callable_result_t<std::remove_reference_t<F>, basic_context<Clock>>;
        static_assert(std::is_same_v<returned, R>,
                      "resil: the callable must return exactly the any_pipeline's result type R (any_pipeline<R>)");
    }

    struct base {
        virtual ~base() = default;
        virtual outcome_type run(detail::callable_ref<R, Clock> fn) const = 0;
        virtual outcome_type run(basic_context<Clock>& ctx, detail::callable_ref<R, Clock> fn) const = 0;
        [[nodiscard]] virtual const Clock& clock() const noexcept = 0;
    };

    template <class Pipeline, class Classifier>
    struct model final : base {
        model(Pipeline p, Classifier c) : pipeline(std::move(p)), classify(std::move(c)) {}
        outcome_type run(detail::callable_ref<R, Clock> fn) const override { return pipeline(fn, classify); }
        outcome_type run(basic_context<Clock>& ctx, detail::callable_ref<R, Clock> fn) const override {
            return pipeline.execute(ctx, fn, classify);
        }
        [[nodiscard]] const Clock& clock() const noexcept override { return pipeline.clock(); }

        Pipeline pipeline;
        Classifier classify;
    };

    std::shared_ptr<const base> impl_;
};

}  // namespace resil
