// A plot written by hand as SVG, for the simulations that draw one
// (adaptive_simulation, balancing_simulation): no plotting library to
// install, and the file is the same bytes on every run.
//
//   example_svg::file svg{"plot.svg", 900, 400};   // the header and a white background
//   if (!svg) return;                               // "cannot write plot.svg" was printed
//   svg.add("<text x=\"%d\" y=\"%d\">%s</text>\n", 60, 20, "title");
//   svg.polyline("#1f77b4", {{60.0, 300.0}, {120.0, 250.5}});
//                                                   // </svg> when it goes out of scope
#pragma once

#include <cstdarg>
#include <cstdio>
#include <utility>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#define RESIL_EXAMPLE_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define RESIL_EXAMPLE_PRINTF(fmt, first)
#endif

namespace example_svg {

class file {
public:
    file(const char* path, int width, int height) : f_(std::fopen(path, "w")) {
        if (f_ == nullptr) {
            std::fprintf(stderr, "cannot write %s\n", path);
            return;
        }
        std::fprintf(f_,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                     "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                     width, height);
    }
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    ~file() {
        if (f_ == nullptr) return;
        std::fprintf(f_, "</svg>\n");
        std::fclose(f_);
    }

    [[nodiscard]] explicit operator bool() const noexcept { return f_ != nullptr; }

    /// Any element, printf-style.
    void add(const char* format, ...) RESIL_EXAMPLE_PRINTF(2, 3) {
        if (f_ == nullptr) return;
        std::va_list args;
        va_start(args, format);
        std::vfprintf(f_, format, args);
        va_end(args);
    }

    /// A line through `points`, given in pixels.
    void polyline(const char* color, const std::vector<std::pair<double, double>>& points, double width = 1.2) {
        if (f_ == nullptr) return;
        std::fprintf(f_, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" points=\"", color, width);
        for (const auto& [x, y] : points) std::fprintf(f_, "%.1f,%.1f ", x, y);
        std::fprintf(f_, "\"/>\n");
    }

private:
    std::FILE* f_;
};

}  // namespace example_svg

#undef RESIL_EXAMPLE_PRINTF
