import sys,collections
tot=collections.defaultdict(float); n=collections.Counter()
for l in open(sys.argv[1]):
    if ',exec,' not in l: continue
    f=l.strip().split(',')
    try: t=float(f[-1])
    except: continue
    tot[f[3]]+=t; n[f[3]]+=1
for k in tot: print(k, n[k], "%.1f ms total"%tot[k])
