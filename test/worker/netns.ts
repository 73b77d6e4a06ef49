/**
 * Network namespaces for the partition test: one namespace a worker, joined
 * to the root namespace by a veth pair on a /24 of its own, and the ways to
 * cut one off (the host side's link down, or iptables DROP on it) and heal it.
 * iproute2 and iptables are installed with apt when missing.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Installs iproute2 / iptables where they are missing (the test's own setup). */
export function ensureTools(): void {
  const missing = [['ip', 'iproute2'], ['iptables', 'iptables']].filter(([cmd]) => !has(cmd!)).map(([, pkg]) => pkg!);
  if (missing.length === 0) return;
  console.log(`[partition] installing ${missing.join(', ')} with apt-get`);
  run('apt-get', ['install', '-y', '--no-install-recommends', ...missing]);
}

/** Null when this kernel lets us make a namespace; otherwise why it refused. */
export function namespaceRefusal(): string | null {
  if (!has('ip')) {
    try {
      ensureTools();
    } catch (error) {
      return `iproute2 is missing and could not be installed: ${(error as Error).message}`;
    }
  }
  const name = `cairn-probe-${randomBytes(3).toString('hex')}`;
  try {
    run('ip', ['netns', 'add', name]);
    run('ip', ['netns', 'del', name]);
    return null;
  } catch (error) {
    return `the kernel refused a network namespace (ip netns add: ${String((error as { stderr?: string }).stderr ?? error).trim()})`;
  }
}

export interface WorkerNet {
  ns: string;
  /** The host side's address: where the worker reaches the proxy. */
  hostIp: string;
  hostDev: string;
  /** `ip netns exec <ns>`: the prefix that runs a command inside. */
  exec: string[];
  linkDown(): void;
  linkUp(): void;
  dropOn(): void;
  dropOff(): void;
  remove(): void;
}

export function createWorkerNet(index: number, tag = randomBytes(2).toString('hex')): WorkerNet {
  const ns = `cairn-w${index}-${tag}`;
  const hostDev = `cw${index}${tag}h`;
  const nsDev = `cw${index}${tag}n`;
  const subnet = `10.${200 + (parseInt(tag, 16) % 50)}.${index + 1}`;
  const hostIp = `${subnet}.1`;
  run('ip', ['netns', 'add', ns]);
  run('ip', ['link', 'add', hostDev, 'type', 'veth', 'peer', 'name', nsDev]);
  run('ip', ['link', 'set', nsDev, 'netns', ns]);
  run('ip', ['addr', 'add', `${hostIp}/24`, 'dev', hostDev]);
  run('ip', ['link', 'set', hostDev, 'up']);
  run('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${subnet}.2/24`, 'dev', nsDev]);
  run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', nsDev, 'up']);
  run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
  const rules = [['INPUT', '-i'], ['OUTPUT', '-o']] as const;
  return {
    ns, hostIp, hostDev, exec: ['ip', 'netns', 'exec', ns],
    linkDown: () => run('ip', ['link', 'set', hostDev, 'down']),
    linkUp: () => run('ip', ['link', 'set', hostDev, 'up']),
    dropOn: () => { for (const [chain, dir] of rules) run('iptables', ['-I', chain, dir, hostDev, '-j', 'DROP']); },
    dropOff: () => { for (const [chain, dir] of rules) run('iptables', ['-D', chain, dir, hostDev, '-j', 'DROP']); },
    remove() {
      for (const [chain, dir] of rules) {
        try { run('iptables', ['-D', chain, dir, hostDev, '-j', 'DROP']); } catch { /* not set */ }
      }
      try { run('ip', ['link', 'del', hostDev]); } catch { /* gone with the namespace */ }
      try { run('ip', ['netns', 'del', ns]); } catch { /* already gone */ }
    },
  };
}
