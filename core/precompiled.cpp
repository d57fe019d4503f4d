// Owner of the product code's precompiled header (see the top-level CMakeLists.txt); no code of its own.
