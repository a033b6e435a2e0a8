# Sourced first by the CLI test scripts, run as SCRIPT LOCKSTEP SCENARIOS [...]
# with `here` (the script's folder) set: L and S are the binary and the
# scenarios folder, made absolute; the cases then run in a temporary folder,
# removed on exit; and the case runner (expect.sh) is loaded.
L=$(realpath "$1")
S=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
source "$here/expect.sh"
