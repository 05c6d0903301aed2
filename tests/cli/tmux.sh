# tmux.sh - a real terminal of a given size for the shell tests: a private
# tmux server (its own socket in the scratch directory, no user
# configuration) whose window is COLS by ROWS, running one command at a
# time, its screen and scrollback read back as a person would see them.
# Sourced after lib.sh.

command -v tmux >/dev/null || skip_test "tmux not found (scripts/deps --test installs it)"

# Each window gets a server of its own (a new socket): a server being
# killed may still answer on its old one.
tmux_n=0
tmux_sock=$dir/tmux.0.sock
printf '%s\n' 'set -g history-limit 100000' 'set -g default-shell /bin/sh' \
	'set -g status off' >"$dir/tmux.conf"
tmux_t() { tmux -S "$tmux_sock" -f "$dir/tmux.conf" "$@"; }
tmux_stop() { tmux_t kill-server 2>/dev/null || true; }
# the server goes first, then scratch.sh's clean-up with the test's status
trap 'tmux_rc=$?; tmux_stop; (exit $tmux_rc); scratch_cleanup' EXIT

# tty_start COLS ROWS CMD...: starts CMD (quoted as given) in a fresh
# window COLS by ROWS, its environment that of the test. When CMD ends,
# its status goes to a file and the window stays as it was (a shell that
# sleeps, printing nothing), for tty_wait_exit to read.
tty_start() {
	local cols=$1 rows=$2 cmd
	shift 2
	printf -v cmd '%q ' "$@"
	tmux_stop
	tmux_n=$((tmux_n + 1))
	tmux_sock=$dir/tmux.$tmux_n.sock
	rm -f "$dir/tty.status"
	tmux_t new-session -d -x "$cols" -y "$rows" -s t \
		"$cmd; echo \$? >'$dir/tty.status.new'; mv '$dir/tty.status.new' '$dir/tty.status'; exec sleep 600" ||
		fail "tmux could not start a $cols x $rows window"
}

# tty_wait_for TEXT: waits (10 s at most) until the screen shows TEXT.
tty_wait_for() {
	wait_until 10 tty_shows "$1" || fail "the screen never showed: $1
$(tmux_t capture-pane -p -t t)"
}
tty_shows() { tmux_t capture-pane -p -t t | grep -qF -- "$1"; }
# tty_prompt: the screen's last row is less's prompt, ":".
tty_prompt() { [ "$(tmux_t capture-pane -p -t t | tail -n 1)" = : ]; }

# tty_wait_exit: waits for the command to end; its status in $status,
# the screen and scrollback in $dir/screen (one line a screen row) and
# $dir/lines (rows that wrapped joined into the line they belong to).
tty_wait_exit() {
	wait_until 20 tty_dead || fail "the command did not end:
$(tmux_t capture-pane -p -t t)"
	status=$(cat "$dir/tty.status" 2>/dev/null)
	tmux_t capture-pane -p -t t -S - -E - >"$dir/screen.raw"
	tmux_t capture-pane -p -J -t t -S - -E - >"$dir/lines.raw"
	# the blank rows below the last output are the screen's, not the command's
	sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$dir/screen.raw" >"$dir/screen"
	sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$dir/lines.raw" >"$dir/lines"
}
tty_dead() { [ -e "$dir/tty.status" ]; }

# tty_run COLS ROWS CMD...: tty_start and tty_wait_exit.
tty_run() {
	tty_start "$@"
	tty_wait_exit
}

# tty_keys KEYS...: types keys into the window (tmux send-keys names).
tty_keys() { tmux_t send-keys -t t "$@"; }
