import subprocess
subprocess.run(['git', 'clone', '--depth', '1', 'https://github.com/ravenquill/spooky-author-kaggle-2nd', 'ref'], check=False)
print(open('ref/README.md').read()[:1500])
