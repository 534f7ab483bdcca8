# shellcheck shell=sh
# Sourced by the pack-*.sh scripts: copy_needed_libs PROGRAM LIBDIR copies the shared libraries
# PROGRAM needs into LIBDIR, except glibc's and the CUDA driver, which the GPU machine has itself.
copy_needed_libs() {
  ldd "$1" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*) ;;
      *) [ -f "$2/$(basename "$lib")" ] || cp -L "$lib" "$2/" ;;
    esac
  done
}

# stub_icu_data LIBDIR replaces ICU's data library there (31 MB, most of a packed tool set) by an
# empty one with the same name and symbol, so that more fits in the 64 MiB a call carries. Only for
# runs that never normalise text through ICU: synth, bench, hybrid, the sweeps and `run` on a
# synthesized slice did not (2026-12-06); a real tokenizer may, and would then fail with ICU's error.
stub_icu_data() {
  for lib in "$1"/libicudata.so.*; do
    [ -f "$lib" ] || continue
    ver=${lib##*libicudata.so.}
    printf 'const char icudt%s_dat[64] __attribute__((aligned(16))) = {0};\n' "${ver%%.*}" > "$1/icudata-stub.c"
    cc -shared -fPIC -o "$lib" -Wl,-soname,"$(basename "$lib")" "$1/icudata-stub.c" && rm -f "$1/icudata-stub.c"
  done
}
