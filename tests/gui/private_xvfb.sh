# Sourced by the GUI test and benchmark scripts: start_private_xvfb LOG starts Xvfb on a free display
# number (1600x1000x24, no TCP), kills it when the calling script exits, waits until its socket is
# there and exports DISPLAY. XVFB_PID holds the server's pid.
start_private_xvfb() {
  local log=$1 n display_num=""
  for n in $(seq 90 190); do
    if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then display_num=$n; break; fi
  done
  if [ -z "$display_num" ]; then echo "no free X display number in 90..190" >&2; return 1; fi
  Xvfb ":$display_num" -screen 0 1600x1000x24 -nolisten tcp >"$log" 2>&1 &
  XVFB_PID=$!
  trap 'kill $XVFB_PID 2>/dev/null; wait $XVFB_PID 2>/dev/null' EXIT
  for _ in $(seq 1 100); do [ -e "/tmp/.X11-unix/X$display_num" ] && break; sleep 0.1; done
  export DISPLAY=":$display_num"
}
