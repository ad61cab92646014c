# Sourced by the shell tools for --version: the project's version, as meson.build states it.
mscclpp_version() {
  sed -n "s/^ *version: '\([^']*\)',.*/\1/p" "$(dirname "${BASH_SOURCE[0]}")/../../meson.build" | head -1
}
