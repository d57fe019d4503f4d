#!/usr/bin/python3
"""What an idle operator costs: a fresh local cluster with the CRDs applied (conversion webhooks
off, as bench_scale installs them) and the operator with every framework enabled and no jobs.
After a settling period, over an interval: the operator's CPU in ms per second (the sum of
/proc/<pid>/task/*/schedstat run times: utime/stime tick at 10 ms, too coarse for an idle
process) and its wake-ups per second (the sum of voluntary_ctxt_switches over
/proc/<pid>/task/*/status), with the threads that woke. Run by hand (not in ctest):

  tests/bench/idle/idle_wakeups.py --operator build/bin/training-operator \\
      --localcluster build/bin/localcluster --source . [--seconds 60] [--gdb] [-- extra operator flags]

--gdb also saves `gdb -p <pid> -batch -ex "thread apply all bt 12"` (what each thread waits in).
docs/performance.md "Idle wake-ups" has the figures.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def wait_for(cond, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def cpu_ms(pid):
    total = 0
    for path in glob.glob(f'/proc/{pid}/task/*/schedstat'):
        try:
            total += int(open(path).read().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total / 1e6


def wakeups(pid):
    per_thread = {}
    for path in glob.glob(f'/proc/{pid}/task/*/status'):
        try:
            text = open(path).read()
        except OSError:
            continue
        per_thread[path.split('/')[4]] = int(re.search(r'voluntary_ctxt_switches:\s*(\d+)', text).group(1))
    return per_thread


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--operator', default='build/bin/training-operator')
    ap.add_argument('--localcluster', default='build/bin/localcluster')
    ap.add_argument('--source', default='.', help='source tree (for manifests/crds)')
    ap.add_argument('--seconds', type=float, default=60)
    ap.add_argument('--settle', type=float, default=15, help='seconds after the operator is ready')
    ap.add_argument('--gdb', action='store_true')
    ap.add_argument('extra', nargs='*', help='extra operator flags (after --)')
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix='idle-wakeups-')
    procs = []

    def spawn(argv, name):
        p = subprocess.Popen(argv, stdout=open(f'{work}/{name}.out', 'w'), stderr=open(f'{work}/{name}.err', 'w'))
        procs.append(p)
        return p

    try:
        spawn([a.localcluster, '--listen', '127.0.0.1:0', '--kubeconfig-out', f'{work}/kubeconfig', '--log-level', 'warn'],
              'cluster')
        if not wait_for(lambda: open(f'{work}/cluster.out').read().startswith('ready ')):
            sys.exit('the local cluster did not get ready')
        crds = f'{work}/crds'
        shutil.copytree(f'{a.source}/manifests/crds', crds)
        for path in glob.glob(crds + '/*.yaml'):
            text = open(path).read()
            text = re.sub(r'  conversion:\n    strategy: Webhook\n(    .*\n)*', '  conversion:\n    strategy: None\n', text)
            open(path, 'w').write(text)
        subprocess.run(['kubectl', '--kubeconfig', f'{work}/kubeconfig', 'apply', '--server-side', '-k', crds],
                       check=True, stdout=subprocess.DEVNULL)
        op = spawn([a.operator, '--kubeconfig', f'{work}/kubeconfig', '--enable-scheme', '*', '--disable-webhooks',
                    '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'] + a.extra,
                   'operator')
        if not wait_for(lambda: 'serving on port' in open(f'{work}/operator.err').read() or op.poll() is not None):
            sys.exit('the operator did not start')
        time.sleep(a.settle)
        if op.poll() is not None:
            sys.exit('the operator exited: ' + open(f'{work}/operator.err').read()[-2000:])
        cpu0, wake0, t0 = cpu_ms(op.pid), wakeups(op.pid), time.time()
        time.sleep(a.seconds)
        cpu1, wake1, t1 = cpu_ms(op.pid), wakeups(op.pid), time.time()
        dt = t1 - t0
        woke = {tid: n - wake0.get(tid, 0) for tid, n in wake1.items()}
        print(f'{a.operator}: CPU {(cpu1 - cpu0) / dt:.3f} ms/s, wake-ups {sum(woke.values()) / dt:.2f}/s over {dt:.0f} s, '
              f'{len(wake1)} threads, load {open("/proc/loadavg").read().split()[0]}')
        busy = sorted(((n, tid) for tid, n in woke.items() if n), reverse=True)
        if busy:
            print('  threads that woke (tid: per second): ' + ', '.join(f'{tid}: {n / dt:.2f}' for n, tid in busy))
        if a.gdb:
            out = subprocess.run(['gdb', '-p', str(op.pid), '-batch', '-ex', 'thread apply all bt 12'],
                                 capture_output=True, text=True).stdout
            keep = tempfile.NamedTemporaryFile('w', prefix='idle-wakeups-gdb-', suffix='.txt', delete=False)
            keep.write(out)
            print('  threads\' stacks:', keep.name)
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
