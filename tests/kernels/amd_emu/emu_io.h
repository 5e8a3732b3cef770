// emu_io.h -- the emulator programs' file exchange with their Python tests: flat binary arrays of
// one element type (numpy's tofile / fromfile), read whole or written whole.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

// n elements of E from path; a short or missing file ends the program (exit 2) with one line.
template <class E>
std::vector<E> read_array(const std::string& path, size_t n) {
    std::vector<E> v(n);
    std::ifstream f(path, std::ios::binary);
    f.read(reinterpret_cast<char*>(v.data()), (std::streamsize)(n * sizeof(E)));
    if (!f) {
        std::fprintf(stderr, "cannot read %zu elements from %s\n", n, path.c_str());
        std::exit(2);
    }
    return v;
}

template <class E>
void write_array(const std::string& path, const std::vector<E>& v) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()),
                                                (std::streamsize)(v.size() * sizeof(E)));
}
