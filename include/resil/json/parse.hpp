// resil/json/parse.hpp — JSON text to a value like nlohmann::json::parse,
// but refusing a key given twice in one object, and with every failure a
// config_error (malformed text with nlohmann's line and column; a number too
// large for a double with its path).
//
//   auto j = resil::json::parse(R"({"retry": {}, "retry": {}})");
//   // config_error "retry: key given twice in one object (the last would silently win)"
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "error.hpp"

namespace resil::json {

/// Parses JSON text like nlohmann::json::parse, but refuses a key given
/// twice in one object (nlohmann keeps the last silently, so a pasted
/// duplicate would override a setting unnoticed). Throws config_error for
/// malformed text too, with nlohmann's line and column.
template <class Json = nlohmann::json>
[[nodiscard]] Json parse(std::string_view text) {
    struct frame {
        bool array = false;
        std::size_t index = 0;        // arrays: elements so far
        std::string key;              // objects: the current key
        std::vector<std::string> keys;
    };
    std::vector<frame> stack;
    const auto path_of = [&stack](std::size_t depth) {
        std::string p;
        for (std::size_t i = 0; i < depth; ++i)
            p = stack[i].array ? detail::join(p, stack[i].index) : detail::join(p, stack[i].key);
        return p;
    };
    const auto element_done = [&stack] {
        if (!stack.empty() && stack.back().array) ++stack.back().index;
    };
    using event_t = typename Json::parse_event_t;
    typename Json::parser_callback_t callback = [&](int /*depth*/, event_t event, Json& parsed) {
        switch (event) {
            case event_t::object_start: stack.push_back(frame{false, 0, {}, {}}); break;
            case event_t::array_start: stack.push_back(frame{true, 0, {}, {}}); break;
            case event_t::key: {
                auto& top = stack.back();
                auto key = parsed.template get<std::string>();
                for (const auto& k : top.keys)
                    if (k == key)
                        throw config_error(detail::join(path_of(stack.size() - 1), key),
                                           "key given twice in one object (the last would silently win)");
                top.keys.push_back(key);
                top.key = std::move(key);
                break;
            }
            case event_t::object_end:
            case event_t::array_end:
                stack.pop_back();
                element_done();
                break;
            case event_t::value: element_done(); break;
        }
        return true;
    };
    const auto without_id = [](const nlohmann::json::exception& e) {
        std::string what = e.what();
        if (what.rfind("[json.exception.", 0) == 0) {
            const auto close = what.find("] ");
            if (close != std::string::npos) what.erase(0, close + 2);
        }
        return what;
    };
    try {
        return Json::parse(text.begin(), text.end(), callback);
    } catch (const nlohmann::json::parse_error& e) {
        throw config_error({}, without_id(e));  // names the line and column
    } catch (const nlohmann::json::out_of_range& e) {
        // A number beyond a double (1e400, -1e400): the lexer has read it, so
        // the innermost container's key or index is the number's own.
        std::string reason = without_id(e);
        const auto quote = reason.find('\'');
        if (e.id == 406 && quote != std::string::npos && reason.size() > quote + 1 && reason.back() == '\'') {
            std::string number = reason.substr(quote + 1, reason.size() - quote - 2);
            reason = "must be a number a double can hold (magnitude at most 1.8e308), got ";
            reason += number;
        }
        throw config_error(path_of(stack.size()), reason);
    } catch (const nlohmann::json::exception& e) {
        // Anything else nlohmann may add: still a config_error, with the path so far.
        throw config_error(path_of(stack.size()), without_id(e));
    }
}

}  // namespace resil::json
