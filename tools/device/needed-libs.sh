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
