# Sourced by the shell tools for --help and --version.

# The project's version, as meson.build states it.
mscclpp_version() {
  sed -n "s/^ *version: '\([^']*\)',.*/\1/p" "$(dirname "${BASH_SOURCE[0]}")/../../meson.build" | head -1
}

# The --version line, NAME (MSCCL++) VERSION, as the C++ tools (support/args.hpp) and the Python scripts print it.
mscclpp_print_version() {
  echo "$1 (MSCCL++) $(mscclpp_version)"
}

# The usage of the script $1: its leading comment block (after the #! line, up to the first line that is not a
# comment), without the comment marks. Read from the script itself, so the help cannot drift from the header.
mscclpp_usage() {
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$1"
}
