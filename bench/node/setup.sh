# Sourced (from the repository root) by the Node benchmarks: npm's dependencies installed and the addon built from
# this tree (incrementally when it was built before), with Node's headers from /usr, never downloaded.
scripts/setup.sh
export npm_config_nodedir=/usr
if [ -d node_modules/rate-limiter-flexible ] && [ -d node_modules/cmake-js ]; then
  npm run build --silent >/dev/null
else
  npm ci --foreground-scripts --no-progress >/dev/null
fi
