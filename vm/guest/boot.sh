#!/bin/bash
# SPDX-License-Identifier: MIT
# Stage 2 of the lab VM, run as PID 1 in the host's root after stage 1 (vm/initramfs/init
# under qemu, vm/uml/init under UML) has mounted everything. confucius.lab.engine copies
# this file into the run's control share (/run/lab/ctl) next to lab.env (the harness's settings), env.sh (the
# script's environment), args (the script's arguments, NUL-separated) and the script.
#
# It prints a "ready" marker, runs the script as root, saves the kernel log, prints the
# script's exit status behind a per-run marker on the console and powers the VM off.
# PID 1 must never exit, so every path ends in power_off.

CTL=/run/lab/ctl
# shellcheck source=/dev/null
. "$CTL/lab.env"

marker() { printf '\n@@lab:%s:%s\n' "$LAB_NONCE" "$*"; }

power_off() {
	sync
	# No init system to wait for: the engine's sysrq key ends the guest at once (qemu: b,
	# a reset, which -no-reboot turns into an exit; UML: o, as it would boot again on b).
	echo "$LAB_POWER_OFF" >/proc/sysrq-trigger
	sleep 10
}

run_script() {
	local -a command args
	mapfile -d '' args <"$CTL/args"
	command=("$CTL/script" "${args[@]}")
	[ -n "$LAB_INTERPRETER" ] && command=("$LAB_INTERPRETER" "${command[@]}")
	cd "$LAB_REPO" || return 127
	# In a subshell: the script's environment cannot touch this script's variables.
	if [ "$LAB_INTERACTIVE" = 1 ]; then
		# A controlling terminal, so that ^C reaches the shell's children, not PID 1.
		(. "$CTL/env.sh" && exec setsid -c "${command[@]}") </dev/console >/dev/console 2>&1
	else
		(. "$CTL/env.sh" && exec "${command[@]}") </dev/null
	fi
}

read -r uptime _ </proc/uptime
marker "ready kernel=$(</proc/sys/kernel/osrelease) uptime=$uptime"
run_script
status=$?
# Written in one go: small writes each cost a round trip to the host over 9p.
dmesg >/run/lab/dmesg && cp /run/lab/dmesg "$LAB_RESULTS_GUEST/dmesg.txt"
marker "exit=$status"
power_off
