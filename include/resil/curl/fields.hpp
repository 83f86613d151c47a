// resil/curl/fields.hpp — HTTP header fields of a request or a response:
// an ordered list with case-insensitive lookup.
//
//   for (auto [name, value] : response.headers()) log(name, value);
//   if (auto type = response.header("content-type")) ...   // any letter case
//
// The fields live in one buffer, each as a ready-to-send "Name: value" line,
// so a request hands libcurl its headers without copying them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/text.hpp"

namespace resil::curl {

/// One header field. Views into the request or response that owns it.
struct header_field {
    /// The field name, as received or added.
    std::string_view name;
    /// The field value, without leading and trailing spaces.
    std::string_view value;
};

namespace detail {

struct field_index {
    std::uint32_t line = 0;         // start of the NUL-terminated "Name: value" line
    std::uint32_t name_size = 0;    // the name starts the line
    std::uint32_t value = 0;        // start of the value
    std::uint32_t value_size = 0;
};

/// The storage behind header_list: lines "Name: value\0" in one string (an
/// empty value is written "Name;\0", which is how libcurl is told to send an
/// empty header rather than remove one of its own).
class field_store {
public:
    void clear() noexcept {
        text_.clear();
        index_.clear();
    }

    /// Appends a field; `name` and `value` are already validated. They may
    /// view this store's own fields (req.add_header("X", *req.header("Y"))).
    void add(std::string_view name, std::string_view value) {
        if (views_text(name) || views_text(value)) {
            const std::string copy = std::string(name) + std::string(value);  // the growth below may move them
            return add(std::string_view(copy).substr(0, name.size()), std::string_view(copy).substr(name.size()));
        }
        const std::string_view separator = value.empty() ? ";" : ": ";
        const std::size_t size = name.size() + separator.size() + value.size() + 1;
        check_size(size);
        field_index f;
        f.line = static_cast<std::uint32_t>(text_.size());
        f.name_size = static_cast<std::uint32_t>(name.size());
        f.value = static_cast<std::uint32_t>(text_.size() + name.size() + separator.size());
        f.value_size = static_cast<std::uint32_t>(value.size());
        make_room(size);
        index_.push_back(f);
        // One growth and three copies: this runs for every received header line.
        text_.resize(text_.size() + size);
        char* out = text_.data() + f.line;
        std::memcpy(out, name.data(), name.size());
        std::memcpy(out + name.size(), separator.data(), separator.size());
        if (!value.empty()) std::memcpy(text_.data() + f.value, value.data(), value.size());
        text_.back() = '\0';
    }

    /// Appends a field given as one "Name: value" line (a single space
    /// after the colon, a value that is not empty), `name_size` bytes of
    /// name; already validated.
    void add_line(std::string_view line, std::size_t name_size) {
        check_size(line.size() + 1);
        field_index f;
        f.line = static_cast<std::uint32_t>(text_.size());
        f.name_size = static_cast<std::uint32_t>(name_size);
        f.value = static_cast<std::uint32_t>(text_.size() + name_size + 2);
        f.value_size = static_cast<std::uint32_t>(line.size() - name_size - 2);
        make_room(line.size() + 1);
        index_.push_back(f);
        // Appended, not resized and overwritten: no zero-fill first.
        text_.append(line);
        text_.push_back('\0');
    }

    /// Appends `more` to the last field's value, after one space (an obsolete
    /// folded continuation line). Does nothing when there is no field yet.
    void extend_last(std::string_view more) {
        if (index_.empty() || more.empty()) return;
        check_size(more.size() + 1);
        make_room(more.size() + 2);  // nothing below can throw then
        auto& f = index_.back();
        text_.pop_back();  // the NUL
        if (f.value_size == 0) {
            // "Name;" becomes "Name: more".
            text_.pop_back();
            text_.append(": ");
            f.value = static_cast<std::uint32_t>(text_.size());
        } else {
            text_.push_back(' ');
            ++f.value_size;
        }
        text_.append(more);
        f.value_size += static_cast<std::uint32_t>(more.size());
        text_.push_back('\0');
    }

    [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }
    [[nodiscard]] header_field at(std::size_t i) const noexcept {
        const auto& f = index_[i];
        return {std::string_view(text_).substr(f.line, f.name_size),
                std::string_view(text_).substr(f.value, f.value_size)};
    }
    /// The i-th field as a NUL-terminated line for libcurl's header list.
    [[nodiscard]] const char* line(std::size_t i) const noexcept { return text_.data() + index_[i].line; }

    [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept {
        for (std::size_t i = 0; i < index_.size(); ++i) {
            const auto field = at(i);
            if (iequals(field.name, name)) return field.value;
        }
        return std::nullopt;
    }

    /// The value of the field line named `name` at `nth` among those (0: the first).
    [[nodiscard]] std::optional<std::string_view> find(std::string_view name, std::size_t nth) const noexcept {
        for (std::size_t i = 0; i < index_.size(); ++i) {
            const auto field = at(i);
            if (iequals(field.name, name) && nth-- == 0) return field.value;
        }
        return std::nullopt;
    }

    /// Drops every field named `name` (any letter case); the others keep
    /// their order.
    void remove(std::string_view name) {
        field_store kept;
        kept.reserve(text_.size(), index_.size());
        for (std::size_t i = 0; i < index_.size(); ++i)
            if (const auto field = at(i); !iequals(field.name, name)) kept.add(field.name, field.value);
        *this = std::move(kept);
    }

    void reserve(std::size_t bytes, std::size_t fields) {
        text_.reserve(bytes);
        index_.reserve(fields);
    }

private:
    [[nodiscard]] bool views_text(std::string_view v) const noexcept {
        return !v.empty() && std::less_equal<>{}(text_.data(), v.data()) && std::less<>{}(v.data(), text_.data() + text_.size());
    }

    // Room for `more` bytes of text, grown by doubling. Called before the
    // index grows, so that a throw (no memory) from either leaves both as
    // they were, and the text's growth after the index's cannot throw.
    void make_room(std::size_t more) {
        if (more > text_.capacity() - text_.size()) text_.reserve(std::max(text_.size() + more, 2 * text_.capacity()));
    }

    void check_size(std::size_t more) const {
        if (more > std::numeric_limits<std::uint32_t>::max() - text_.size())
            throw std::length_error("resil::curl: header fields exceed 4 GiB");
    }

    std::string text_;
    std::vector<field_index> index_;
};

}  // namespace detail

/// A read-only view of header fields, in the order they were added or
/// received. Valid while its owner lives and is not modified.
class header_list {
public:
    /// A forward iterator over the fields, yielding header_field views.
    class iterator {
    public:
        /// A forward iterator.
        using iterator_category = std::forward_iterator_tag;
        /// The field it yields.
        using value_type = header_field;
        /// For std::iterator_traits.
        using difference_type = std::ptrdiff_t;
        /// No pointer: fields are yielded by value.
        using pointer = void;
        /// Fields are yielded by value.
        using reference = header_field;

        iterator() = default;
        /// The field it points at.
        [[nodiscard]] header_field operator*() const noexcept { return store_->at(at_); }
        /// To the next field.
        iterator& operator++() noexcept {
            ++at_;
            return *this;
        }
        /// To the next field, returning where it was.
        iterator operator++(int) noexcept {
            auto copy = *this;
            ++at_;
            return copy;
        }
        /// Equal when at the same field.
        friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

    private:
        friend class header_list;
        iterator(const detail::field_store* s, std::size_t at) noexcept : store_(s), at_(at) {}
        const detail::field_store* store_ = nullptr;
        std::size_t at_ = 0;
    };

    /// A view of `store`'s fields.
    explicit header_list(const detail::field_store& store) noexcept : store_(&store) {}

    /// The first field.
    [[nodiscard]] iterator begin() const noexcept { return {store_, 0}; }
    /// Past the last field.
    [[nodiscard]] iterator end() const noexcept { return {store_, store_->size()}; }
    /// How many fields.
    [[nodiscard]] std::size_t size() const noexcept { return store_->size(); }
    /// True when there are none.
    [[nodiscard]] bool empty() const noexcept { return store_->size() == 0; }
    /// The i-th field; i < size().
    [[nodiscard]] header_field operator[](std::size_t i) const noexcept { return store_->at(i); }
    /// The value of the first field named `name` (any letter case), if any.
    [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept {
        return store_->find(name);
    }
    /// The value of the field line named `name` at `nth` among the lines of
    /// that name (0: the first, as find(name)), if there are that many: a
    /// field sent on several lines (RFC 9110 §5.3) is kept as they came.
    [[nodiscard]] std::optional<std::string_view> find(std::string_view name, std::size_t nth) const noexcept {
        return store_->find(name, nth);
    }

private:
    const detail::field_store* store_;
};

}  // namespace resil::curl
