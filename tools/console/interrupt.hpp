// interrupt: Ctrl-C for the console. The SIGINT handler only raises a process-wide flag and writes
// one byte to a self-pipe (both async-signal-safe); the console polls them. While generating it
// checks the flag and cancels the request; at the prompt the line reader waits on stdin and the
// pipe together (poll), so a Ctrl-C that lands between two reads is not lost, and clears the line.
// SIGINT should reach the console's thread only: block it before starting other threads (engine,
// kernel pool) and unblock it on the console's thread afterwards.
// Thread-safety: every function may be called from any thread.
#pragma once

namespace fw::console {

/// Installs the SIGINT handler (replacing the default, which ends the process) and the self-pipe.
void install_interrupt_handler();
/// Blocks (or unblocks) SIGINT in the calling thread; threads started later inherit the mask.
void block_interrupts_in_this_thread();
void unblock_interrupts_in_this_thread();
/// True once per Ctrl-C (several quick ones count as one): reading clears the flag and the pipe.
bool take_interrupt();
/// The self-pipe's read end (readable after a Ctrl-C until take_interrupt()); -1 before install.
int interrupt_fd();

}  // namespace fw::console
