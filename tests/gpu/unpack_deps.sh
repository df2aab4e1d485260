#!/usr/bin/env bash
# Unpacks the carried Debian packages (tests/gpu/prepare.sh) into a private
# prefix and makes them findable, for tests/gpu/run.sh on a machine that has
# neither the packages nor apt-get:
#   tests/gpu/unpack_deps.sh DEPS ROOT
#     DEPS  the carried folder (debs/, wheels/, MANIFEST.txt)
#     ROOT  where the packages' trees go (ROOT/usr/include, ROOT/usr/lib/...):
#           never /, so nothing on the machine is overwritten
# Steps: check every file against the manifest (a truncated copy is named),
# extract with dpkg -x (or, where dpkg is missing, with Python: a .deb is an
# ar archive holding data.tar.*), rewrite the pkg-config prefixes, check that
# no CMake file of the packages points at an absolute /usr path (their
# configs compute _IMPORT_PREFIX from their own location: only the
# "/usr move" comparison lines name /usr, and those never match here), and
# register the libraries with the loader: as root through a file in
# /etc/ld.so.conf.d + ldconfig, because some child processes (pip's build,
# sanitizer re-execs) do not pass LD_LIBRARY_PATH on; run.sh sets
# LD_LIBRARY_PATH as well, the only way when not root.
# Environment: AXL_GPU_LDCONFIG=0 skips the ldconfig registration;
# AXL_GPU_PY_UNPACK=1 uses the Python extractor even where dpkg is (tests).
# Prints "FIX: ..." (one line, what to do) before any failing exit.
set -uo pipefail
# (No "producer | grep -q" under pipefail below: grep -q stops reading and the
# producer's SIGPIPE would fail the pipeline.)

deps="${1:?usage: unpack_deps.sh DEPS ROOT}"
root="${2:?usage: unpack_deps.sh DEPS ROOT}"
if [[ ! -d "$deps/debs" || ! -s "$deps/MANIFEST.txt" ]]; then
  echo "unpack: $deps has no debs/ or MANIFEST.txt"
  echo "FIX: run tests/gpu/prepare.sh on a networked Debian 12 machine and carry build-deps with the source tree"
  exit 2
fi
case "$(cd "$(dirname "$root")" 2>/dev/null && pwd)/$(basename "$root")" in
  / | /usr | /usr/*) echo "unpack: refusing to unpack into $root"; echo "FIX: give a private folder (run.sh uses build-deps/root)"; exit 2 ;;
esac

# 1. The manifest: every file there, with its checksum.
bad=0
while read -r pkg ver file sum; do
  if [[ ! -f "$deps/$file" ]]; then
    echo "unpack: $file ($pkg $ver) is missing"; bad=1
  elif [[ "$(sha256sum "$deps/$file" | cut -d' ' -f1)" != "$sum" ]]; then
    echo "unpack: $file ($pkg $ver) does not match its checksum (truncated copy?)"; bad=1
  fi
done <"$deps/MANIFEST.txt"
if ((bad)); then
  echo "FIX: run tests/gpu/prepare.sh again on the networked machine and carry build-deps whole"
  exit 2
fi

# 2. Extract into a fresh root (an older unpack of other versions would mix).
rm -rf "$root.tmp" && mkdir -p "$root.tmp" || { echo "FIX: make $(dirname "$root") writable"; exit 2; }
for deb in "$deps"/debs/*.deb; do
  if command -v dpkg-deb >/dev/null && [[ ${AXL_GPU_PY_UNPACK:-0} != 1 ]]; then
    dpkg-deb -x "$deb" "$root.tmp" || { echo "unpack: dpkg-deb -x failed on $deb"; echo "FIX: carry build-deps again (prepare.sh)"; exit 2; }
  else
    python3 - "$deb" "$root.tmp" <<'EOF' || { echo "unpack: could not extract $deb without dpkg"; echo "FIX: install dpkg or carry build-deps again"; exit 2; }
# A .deb is an ar archive: "!<arch>\n", then 60-byte member headers (name 16,
# size at 48..58, decimal), members padded to even length. The file tree is
# the member data.tar.{xz,gz,bz2}.
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
with open(deb, "rb") as f:
    if f.read(8) != b"!<arch>\n":
        sys.exit(f"{deb}: not an ar archive")
    while True:
        header = f.read(60)
        if len(header) < 60:
            sys.exit(f"{deb}: no data.tar member")
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58])
        body = f.read(size)
        if size % 2:
            f.read(1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as t:
                if hasattr(tarfile, "tar_filter"):
                    t.extractall(dest, filter="tar")
                else:
                    t.extractall(dest)
            break
EOF
  fi
done
rm -rf "$root" && mv "$root.tmp" "$root"
root="$(cd "$root" && pwd)"

# 3. Relocation. pkg-config files name prefix=/usr: point them here.
# (fmt.pc and benchmark.pc also spell exec_prefix/libdir/includedir out.)
find "$root/usr" -name '*.pc' -type f -exec sed -i -E "s#^([a-z_]+)=/usr(/|\$)#\1=$root/usr\2#" {} +
# CMake files: any absolute /usr path other than the "/usr move" check lines
# would make CMake use (or miss) the system's copy: rewrite it into the root.
# The "/usr move" block (_realOrig, and the set() it guards) only applies
# when the file's real path is the original one, never true here.
usr_move='_realOrig|set\(_IMPORT_PREFIX "/usr|set\(PACKAGE_PREFIX_DIR "/usr"\)'
leftover=""
while IFS= read -r f; do
  if grep -v -E "$usr_move|^[[:space:]]*#" "$f" | grep '"/usr' >/dev/null; then
    sed -i -E "\\%$usr_move|^[[:space:]]*#%! s#\"/usr/#\"$root/usr/#g" "$f"
    leftover+=" $(basename "$f")"
  fi
done < <(find "$root/usr" -name '*.cmake' -type f)
if [[ -n "$leftover" ]]; then
  echo "unpack: rewrote absolute /usr paths in:$leftover"
else
  echo "unpack: CMake configs are relocatable (no absolute /usr path outside the /usr-move check)"
fi

# 4. Each package's CMake config folder, as run.sh passes them (<pkg>_DIR:
# Debian puts most under lib/x86_64-linux-gnu/cmake, which CMake searches
# only when the compiler reports that multiarch triplet; Catch2 v2 is under
# lib/cmake).
missing=""
for pkg in spdlog fmt Catch2 benchmark; do
  dir="$(dirname "$(find "$root/usr/lib" -path "*/cmake/$pkg/*" \( -name "${pkg}Config.cmake" -o -name "$(tr 'A-Z' 'a-z' <<<"$pkg")-config.cmake" \) | head -1)")"
  if [[ "$dir" == . ]]; then missing+=" $pkg"; else echo "cmake-dir $pkg $dir"; fi
done
if [[ -n "$missing" ]]; then
  echo "unpack: no CMake config for:$missing"
  echo "FIX: tests/gpu/prepare.sh lost a package (check DEBS there), rerun it and carry build-deps"
  exit 2
fi

# 5. The loader.
libdirs=()
for d in "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib"; do
  compgen -G "$d/*.so*" >/dev/null && libdirs+=("$d")
done
echo "libdirs ${libdirs[*]}"
if [[ $(id -u) -eq 0 && "${AXL_GPU_LDCONFIG:-1}" != 0 ]] && command -v ldconfig >/dev/null; then
  conf=/etc/ld.so.conf.d/axl-gpu-deps.conf
  if printf '%s\n' "${libdirs[@]}" >"$conf" 2>/dev/null && ldconfig 2>&1 | grep -v 'is not a symbolic link\|is empty, not checked\|file too short'; then :; fi
  if ldconfig -p | grep "$root/usr/lib/x86_64-linux-gnu/libspdlog.so" >/dev/null; then
    echo "ldconfig: registered ${libdirs[*]} ($conf)"
  else
    echo "ldconfig: could not register the libraries ($conf not writable?): LD_LIBRARY_PATH only"
  fi
else
  echo "ldconfig: not root (or AXL_GPU_LDCONFIG=0): LD_LIBRARY_PATH only"
fi
exit 0
