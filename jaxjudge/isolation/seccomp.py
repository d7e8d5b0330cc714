"""A small hand-written seccomp-BPF filter for sandboxed stage processes.

Why by hand: the filter is a flat deny list plus two argument checks (about 70 classic BPF
instructions), the only Python binding (libseccomp's) ships for Debian's system interpreter, not
for our venvs, and no wheel is available. The generator below is pure data; `install()` is what
the sandbox bootstrap calls inside the child, before any untrusted code runs.

Policy (x86-64 only; other architectures report the layer as unavailable):
- foreign ABIs (x32, i386 via int 0x80) -> process killed;
- new processes: fork/vfork, clone without CLONE_THREAD or with namespace flags -> EPERM;
  clone3 -> ENOSYS so glibc falls back to clone(), whose flags we *can* inspect (threads work);
- all socket creation -> EPERM (jax on CPU needs none; nothing to connect to anyway);
- SysV IPC (shared memory, semaphores, message queues) and POSIX message queues -> EPERM: they
  live in an IPC namespace, not in a file a run's teardown removes, so they are a channel from
  one run to the next (the sandbox also gives runs their own IPC namespace or removes the
  objects, for when this filter is off). jax, numpy and XLA use none of them;
- debugging other processes, namespaces and mounts, kernel keyrings, bpf, perf, io_uring (it
  would bypass this filter), module loading and other admin calls -> EPERM;
- execve/execveat -> EPERM unless `allow_exec` (trusted stages may keep it).
"""

from __future__ import annotations

import ctypes
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

CLONE_THREAD = 0x00010000
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NAMESPACE_FLAGS = 0x7E020000

EPERM = 1
ENOSYS = 38

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# Classic BPF opcodes.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# seccomp_data offsets: nr (u32) @0, arch (u32) @4, ip (u64) @8, args[6] (u64) @16.
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LO = 16  # little endian: low half of args[0]

# x86-64 syscall numbers (from asm/unistd_64.h; tests cross-check against the header if present).
SYSCALLS_X86_64: dict[str, int] = {
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "socket": 41,
    "socketpair": 53,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "ptrace": 101,
    "syslog": 103,
    "uselib": 134,
    "modify_ldt": 154,
    "pivot_root": 155,
    "_sysctl": 156,
    "chroot": 161,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "lookup_dcookie": 212,
    "semtimedop": 220,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "seccomp": 317,
    "kexec_file_load": 320,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
}

DENIED: tuple[str, ...] = (
    "socket", "socketpair", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "pidfd_getfd", "syslog", "uselib", "modify_ldt", "pivot_root", "_sysctl", "chroot",
    "acct", "mount", "umount2", "swapon", "swapoff", "reboot", "iopl", "ioperm", "init_module",
    "finit_module", "delete_module", "quotactl", "lookup_dcookie", "kexec_load",
    "kexec_file_load", "add_key", "request_key", "keyctl", "unshare", "setns", "perf_event_open",
    "name_to_handle_at", "open_by_handle_at", "bpf", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    # cross-run channels that outlive a process (see the module docstring)
    "shmget", "shmat", "shmctl", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr",
)
EXEC_CALLS: tuple[str, ...] = ("execve", "execveat")


def supported() -> tuple[bool, str]:
    """Whether this machine can use the filter (architecture check only; the kernel is probed
    by the sandbox's detection run)."""
    machine = platform.machine()
    if machine != "x86_64":
        return False, f"seccomp filter only written for x86_64, this is {machine}"
    return True, "x86_64 classic BPF filter"


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def build_filter(*, allow_exec: bool) -> bytes:
    """The filter as packed `struct sock_filter` records (8 bytes each)."""
    deny = [SYSCALLS_X86_64[n] for n in DENIED]
    if not allow_exec:
        deny += [SYSCALLS_X86_64[n] for n in EXEC_CALLS]
    # Symbolic program: jumps name a label, resolved to relative offsets below.
    prog: list[tuple[int, int, str | int, str | int]] = []  # (code, k, jt, jf)
    prog.append((_LD_W_ABS, _OFF_ARCH, 0, 0))
    prog.append((_JEQ_K, AUDIT_ARCH_X86_64, 0, "kill"))
    prog.append((_LD_W_ABS, _OFF_NR, 0, 0))
    prog.append((_JGE_K, X32_SYSCALL_BIT, "kill", 0))
    for nr in deny:
        prog.append((_JEQ_K, nr, "eperm", 0))
    prog.append((_JEQ_K, SYSCALLS_X86_64["clone3"], "enosys", 0))
    prog.append((_JEQ_K, SYSCALLS_X86_64["clone"], "clone", 0))
    prog.append((_RET_K, RET_ALLOW, 0, 0))
    labels: dict[str, int] = {}
    labels["clone"] = len(prog)
    prog.append((_LD_W_ABS, _OFF_ARG0_LO, 0, 0))
    prog.append((_JSET_K, CLONE_THREAD, 0, "eperm"))
    prog.append((_JSET_K, CLONE_NAMESPACE_FLAGS, "eperm", 0))
    prog.append((_RET_K, RET_ALLOW, 0, 0))
    labels["eperm"] = len(prog)
    prog.append((_RET_K, RET_ERRNO | EPERM, 0, 0))
    labels["enosys"] = len(prog)
    prog.append((_RET_K, RET_ERRNO | ENOSYS, 0, 0))
    labels["kill"] = len(prog)
    prog.append((_RET_K, RET_KILL_PROCESS, 0, 0))

    out = bytearray()
    for i, (code, k, jt, jf) in enumerate(prog):
        offs = []
        for target in (jt, jf):
            if isinstance(target, str):
                off = labels[target] - i - 1
                if not 0 <= off <= 255:
                    raise ValueError("seccomp filter too long for 8-bit jumps")
                offs.append(off)
            else:
                offs.append(target)
        out += struct.pack("<HBBI", code, offs[0], offs[1], k)
    return bytes(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(filter_bytes: bytes) -> None:
    """Install `filter_bytes` on the calling process (all threads), irreversibly.

    Sets no_new_privs first (required for unprivileged filters). Raises OSError on failure.
    The sandbox bootstrap inlines an equivalent of this (it cannot import the grader package);
    this copy exists for the detection probe and the tests.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    prog = _SockFprog(len(filter_bytes) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog)
    if libc.syscall(SYSCALLS_X86_64["seccomp"], 1, 1, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
