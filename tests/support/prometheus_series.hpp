// The series of a Prometheus text, reduced to what the operator files and
// the exporters must agree on: each family's name and the label names of
// its series (histograms under their family's name, without `le`).
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

namespace resil_test {

/// family name -> the sets of label names its series carry.
using series_shapes = std::map<std::string, std::set<std::set<std::string>>>;

inline std::string family_of(std::string name, const std::set<std::string>& histograms) {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"})
        if (name.size() > suffix.size() && name.ends_with(suffix)) {
            const auto base = name.substr(0, name.size() - suffix.size());
            if (histograms.count(base)) return base;
        }
    return name;
}

inline series_shapes shapes_of_text(const std::string& text) {
    std::set<std::string> histograms;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with("# TYPE ") && line.ends_with(" histogram"))
            histograms.insert(line.substr(7, line.size() - 7 - 10));
    series_shapes out;
    std::istringstream again(text);
    for (std::string line; std::getline(again, line);) {
        if (line.empty() || line.front() == '#') continue;
        const auto brace = line.find('{');
        const auto name = line.substr(0, std::min(brace, line.find(' ')));
        std::set<std::string> labels;
        if (brace != std::string::npos) {
            // name="value",... with escaped quotes inside values.
            std::size_t i = brace + 1;
            while (i < line.size() && line[i] != '}') {
                const auto eq = line.find('=', i);
                labels.insert(line.substr(i, eq - i));
                i = eq + 2;
                while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
                i += 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
        }
        labels.erase("le");
        out[family_of(name, histograms)].insert(labels);
    }
    return out;
}

}  // namespace resil_test
