"""Connector measurements for benches/RESULTS.md (issue 11), against servers you started:

    R=redis://127.0.0.1:PORT/ P=postgresql://postgres@127.0.0.1:PORT/postgres \
    PGDATA=/path/to/data python3 benches/connectors_scale.py scale 4   # 1 vs 2 workers, alternated
    ... connectors_scale.py ab 3      # 1 worker, 3 runs (EXTRA="--guarantee at-least-once" adds options)
    ... connectors_scale.py ceil 3                                       # the Redis ceiling

Each run loads tinyshakespeare into a fresh stream, empties word_counts, drains it with
`acker-run wordcount --cores 1 --no-pin --drain` (exactly-once), and prints one JSON line:
wall time (process start to exit), entries/s, each worker's CPU-s (user+sys, /usr/bin/time),
PostgreSQL's CPU-s (the postmaster's utime+stime+cutime+cstime: backends exit with their
worker) and statement time (sum of pg_stat_database.active_time), the words counted, the load
average, and redis-server's CPU-s (its utime+stime, pid from `redis-cli INFO server`; the ceiling
lines also have the loop's own CPU-s) (CORES=N: --cores N instead of 1, CORES=all: no --cores, i.e. all cores). Needs release builds of acker-run and the redis_ceiling example, and psql.
LOADS=4 loads the file 4 times into each stream (a second figure: fixed costs against rate;
the goal's figure is LOADS=1). BIN=/path/to/acker-run runs another build of the worker.

    BEFORE=/tmp/c-before/acker-run ... connectors_scale.py vs 5

alternates, 5 times: one run of BEFORE, one of this tree's build, one ceiling (each line
labelled `before`, `after`, `ceil`; NOCEIL=1 leaves the ceiling out); `median` reads such lines on stdin and prints the medians
(min-max) of each label. `ab2 N` alternates EXTRA_A and EXTRA_B options N times (labels
`a`, `b`), e.g. EXTRA_A="--guarantee at-least-once --sink-tasks 1".
"""
import subprocess, json, time, sys, os
ROOT=os.path.join(os.path.dirname(os.path.abspath(__file__)),'..')
BIN=os.environ.get('BIN') or os.path.join(ROOT,'target/release/acker-run')
R=os.environ.get('R'); P=os.environ.get('P')
PGPID=int(open(os.path.join(os.environ['PGDATA'],'postmaster.pid')).readline()) if 'PGDATA' in os.environ else None
SH=os.path.join(ROOT,'../shared/data/tinyshakespeare.txt')
LOADS=int(os.environ.get('LOADS','1'))
# CORES=N runs the workers with --cores N (default 1); CORES=all leaves --cores out (all cores).
CORES=[] if os.environ.get('CORES')=='all' else ['--cores',os.environ.get('CORES','1')]
def pgcpu():
    f=open(f'/proc/{PGPID}/stat').read().rsplit(')',1)[1].split()
    return sum(int(x) for x in f[11:15])/100.0
def redis_pid():
    out=subprocess.run(['redis-cli','-u',R,'INFO','server'],capture_output=True,text=True).stdout
    return next((int(l.split(':')[1]) for l in out.splitlines() if l.startswith('process_id:')),None)
RPID=redis_pid() if R else None
def rcpu():
    if not RPID: return float('nan')
    f=open(f'/proc/{RPID}/stat').read().rsplit(')',1)[1].split()
    return sum(int(x) for x in f[11:13])/100.0
def psql(q):
    return subprocess.run(['psql',P,'-Atc',q],capture_output=True,text=True).stdout.strip()
def active():
    return float(psql("select coalesce(sum(active_time),0) from pg_stat_database") or 0)
n=0
def run(workers, extra=(), bin=None):
    global n
    n+=1
    s=f'sc{os.getpid()}_{n}'
    for _ in range(LOADS):
        subprocess.run([BIN,'load','--input',SH,'--redis',R,'--stream',s],check=True,capture_output=True)
    psql("truncate word_counts; truncate word_count_applied_entries")
    c0,a0,r0=pgcpu(),active(),rcpu()
    t0=time.time()
    ps=[subprocess.Popen(['/usr/bin/time','-f','%U %S',bin or BIN,'wordcount','--redis',R,'--stream',s,'--postgres',P,*CORES,'--no-pin','--drain','--json','--progress-secs','0','--consumer',f'w{i}',*extra],stdout=subprocess.PIPE,stderr=subprocess.PIPE,text=True) for i in range(workers)]
    outs=[p.communicate() for p in ps]
    wall=time.time()-t0
    c1,a1,r1=pgcpu(),active(),rcpu()
    total=psql("select sum(count) from word_counts")
    cpus=[sum(float(x) for x in e.strip().splitlines()[-1].split()) for _,e in outs]
    js=[json.loads(o) for o,_ in outs]
    acked=sum(j['acked'] for j in js)
    return dict(workers=workers, wall_s=round(wall,2), entries_per_s=round(acked/wall), acked=[j['acked'] for j in js], worker_cpu_s=cpus, pg_cpu_s=round(c1-c0,2), pg_active_ms=round(a1-a0), redis_cpu_s=round(r1-r0,2), words=total, load=os.getloadavg()[0])
mode=sys.argv[1]
if mode=='scale':
    for i in range(int(sys.argv[2])):
        for w in (1,2):
            print(json.dumps(run(w)),flush=True)
elif mode=='ab':
    for i in range(int(sys.argv[2])):
        print(json.dumps(run(1, os.environ.get('EXTRA', '').split())),flush=True)
def ceil(i):
    s=f'ceil{os.getpid()}_{i}'
    for _ in range(LOADS):
        subprocess.run([BIN,'load','--input',SH,'--redis',R,'--stream',s],check=True,capture_output=True)
    r0=rcpu()
    p=subprocess.run(['/usr/bin/time','-f','%U %S',os.path.join(ROOT,'target/release/examples/redis_ceiling'),R,s,'500'],capture_output=True,text=True)
    loop=sum(float(x) for x in p.stderr.strip().splitlines()[-1].split())
    return p.stdout.strip(), round(rcpu()-r0,2), round(loop,2)
if mode=='ceil':
    for i in range(int(sys.argv[2])):
        c,rc,lc=ceil(i)
        print(c,f'(redis-server {rc} CPU-s, the loop {lc} CPU-s)',flush=True)
elif mode=='vs':
    extra=os.environ.get('EXTRA', '').split()
    for i in range(int(sys.argv[2])):
        print('before',json.dumps(run(1, extra, os.environ['BEFORE'])),flush=True)
        print('after',json.dumps(run(1, extra)),flush=True)
        if os.environ.get('NOCEIL'): continue
        c,rc,lc=ceil(i)
        print('ceil',json.dumps(dict(entries_per_s=round(float(c.split(': ')[1].split()[0])),line=c,redis_cpu_s=rc,loop_cpu_s=lc,load=os.getloadavg()[0])),flush=True)
elif mode=='ab2':
    # Alternates options EXTRA_A and EXTRA_B on this tree's build (lines labelled `a`, `b`).
    for i in range(int(sys.argv[2])):
        for k in ('a','b'):
            print(k,json.dumps(run(1, os.environ.get('EXTRA_'+k.upper(), '').split())),flush=True)
elif mode=='median':
    import statistics
    by={}
    for l in sys.stdin:
        if l.strip():
            k,j=l.split(' ',1); by.setdefault(k,[]).append(json.loads(j))
    for k,rs in by.items():
        out=[]
        for f in ('entries_per_s','wall_s','worker_cpu_s','pg_cpu_s','pg_active_ms','redis_cpu_s','loop_cpu_s','load'):
            v=[(sum(r[f]) if isinstance(r[f],list) else r[f]) for r in rs if f in r]
            if v: out.append(f'{f} {statistics.median(v):g} ({min(v):g}-{max(v):g})')
        print(k,len(rs),'runs:','; '.join(out))
