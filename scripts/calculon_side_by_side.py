#!/usr/bin/env python3
"""Runs the analytic peer Calculon (github.com/calculon-ai/calculon) on the published
training runs of topologies/validation/published-runs.csv and sets its error beside ibt's.

scripts/compare_calculon.sh is the entry point: it gets ibt's figures per row from
scripts/validate_published.sh --rows and calls this helper with them. For each row the
helper writes Calculon's three inputs (application, execution, system) from ibt's model
and topology catalogs and the row's split, makes the calls Calculon's `llm` command makes
(in this process, importing the user's checkout once), and turns Calculon's step time
into the row's metric. Nothing of Calculon is copied here: only its JSON input fields and
the classes its `llm` command uses.

How a row becomes Calculon's inputs (each choice is a property of the run or of Calculon,
never fitted to the rows):
- application: hidden, heads, head size, layers and sequence length from the ibt model
  catalog. Calculon's block is GPT-style (two MLP GEMMs, GeLU); a SwiGLU MLP is given as
  feedforward = 1.5 x ffn_hidden, which keeps its weights and GEMM FLOPs exactly. Calculon
  knows multi-head and multi-query attention only: grouped-query models (kv_heads < heads)
  are given as multi-query, whose K/V projection Calculon does not split across tensor
  parallelism, so it is exact per GPU when tp = kv_heads and short of the true K/V work
  otherwise. Calculon prices no embedding, output layer or loss.
- system: Calculon's own files for DGX A100 (systems/a100_80g.json, the file of its
  end-to-end validation) and DGX H100 (systems/h100_80g_nvl8.json). Calculon ships none
  for other hardware; for NVIDIA topologies it lacks, the system is written from ibt's
  catalog (peak FLOP/s, HBM capacity and bandwidth, NVLink domain size and bandwidth,
  scale-out bandwidth) with Calculon's H100 efficiency curves and op costs, and every
  such row says so (system column "ibt-catalog:NAME"); the vector (non-tensor) rate,
  which ibt's catalog lacks, is Calculon's H100 figure scaled by the FP32 ratio.
- execution: the row's split, batch and micro-batch; its framework's options: megatron-2021
  = Calculon's own validation inputs for Korthikanti et al. 2022 (sequence parallelism,
  nothing overlapped, unfused GeLU); megatron-core = sequence parallelism, TP communication
  overlapped with the GEMMs (Calculon "ring", as Transformer Engine's userbuffers overlap),
  DP gradient reduction overlapped, fused activation. ZeRO stage 1 or 2 (column zero, or
  zero1 in older files) = Calculon's optimizer sharding (it shards the gradients too);
  stage 3 (FSDP) it cannot state. Recompute "selective" is Calculon's "attn_only"; "auto" takes, as
  validate_published.sh does for ibt, the least recompute that fits Calculon's own memory
  model (none, attn_only, full); vpp "auto" takes the virtual-stage count ibt chose
  (validate_published.sh --rows, column vpp_used). fp8 rows run Calculon's float8 datatype; bf16 rows its
  float16 (same width and tensor rate in its system files).
- networks: tier 0 is the NVLink domain, tier 1 the scale-out fabric. Megatron orders ranks
  tensor, then data, then pipeline, so TP goes on tier 0, DP too when tp x dp fills a
  divisor of the domain, PP too when tp x dp x pp does; the rest on tier 1 (Calculon puts a
  whole parallel dimension on one tier).
"""

import argparse
import csv
import json
import logging
import os
import statistics
import sys

SHIPPED_SYSTEMS = {
    'dgx-a100': 'systems/a100_80g.json',
    'dgx-h100': 'systems/h100_80g_nvl8.json',
}
# Calculon's H100 file: its efficiency curves and op costs are reused for NVIDIA
# systems written from ibt's catalog (only the rates and sizes come from ibt).
CURVES_FROM = 'systems/h100_80g_nvl8.json'
GIB = 1024 ** 3


class NotExpressible(Exception):
  """A row Calculon's model cannot state; the message is the reason."""


def read_csv_rows(path):
  with open(path, newline='') as f:
    lines = [line for line in f if line.strip() and not line.startswith('#')]
  return list(csv.DictReader(lines))


def row_key(r):
  return '/'.join([r['family'], r['model'], r['topology'], r['gpus']]) + \
      ' tp{tp} pp{pp} v{vpp} ep{ep} cp{cp} b{mbs} gb{global_batch}'.format(**r)


def load_json(path):
  with open(path) as f:
    return json.load(f)


def catalog_dir(repo, variable, part):
  """The catalog ibt itself reads: the same environment variable overrides it."""
  return os.environ.get(variable) or os.path.join(repo, part, 'catalog')


def zero_stage(r):
  """The row's ZeRO stage: column zero (a stage), or zero1 (0/1) in older files."""
  return int(r.get('zero', r.get('zero1', '0')) or 0)


def application(model):
  """Calculon's application JSON for an ibt catalog model, or NotExpressible."""
  if model.get('num_experts', 0) or model.get('experts', 0):
    raise NotExpressible('mixture of experts: Calculon models dense blocks only')
  if model.get('attention', 'standard') != 'standard':
    raise NotExpressible(f"{model['attention']} attention: Calculon knows multi-head and multi-query only")
  head = model.get('head_dim') or model['hidden'] // model['heads']
  ffn = model['ffn_hidden']
  if model.get('activation', 'gelu') == 'swiglu':
    if (3 * ffn) % 2:
      raise NotExpressible('SwiGLU ffn_hidden odd: no whole 1.5 x feedforward')
    ffn = 3 * ffn // 2
  kv = model.get('kv_heads', model['heads'])
  return ({'hidden': model['hidden'], 'feedforward': ffn, 'seq_size': model['seq_len'],
           'attn_heads': model['heads'], 'attn_size': head, 'num_blocks': model['layers']},
          'multihead' if kv == model['heads'] else 'multiquery')


def system_from_ibt(topo, h100, calculon_dir):
  """Calculon system JSON from an ibt catalog topology: ibt's rates and sizes, Calculon's
  H100 efficiency curves and op costs. h100: ibt's dgx-h100 entry, the base of the vector
  rate's scaling."""
  base = load_json(os.path.join(calculon_dir, CURVES_FROM))
  dev, up, out = topo['device'], topo['scale_up'], topo['scale_out']
  peak = {k: v['value'] for k, v in dev['peak_tflops'].items()}
  sysj = json.loads(json.dumps(base))
  sysj['matrix'] = {}
  sysj['vector'] = {}
  h100_fp32 = h100['device']['peak_tflops']['fp32']['value']
  for dtype, key in (('float16', 'bf16'), ('float8', 'fp8')):
    if key not in peak:
      continue
    sysj['matrix'][dtype] = dict(base['matrix']['float16'], tflops=peak[key])
    # ibt's catalog has no non-tensor half-precision rate: Calculon's H100 vector rate
    # scaled by the ratio of the catalog's FP32 rates (halving it instead moves the
    # Blackwell rows' step by 4-6%).
    sysj['vector'][dtype] = dict(base['vector']['float16'],
                                 tflops=round(base['vector']['float16']['tflops'] * peak['fp32'] / h100_fp32, 1))
  sysj['mem1'] = dict(base['mem1'], GiB=dev['memory_GB']['value'] * 1e9 / GIB,
                      GBps=dev['memory_bandwidth_GBps']['value'])
  sysj['networks'][0] = dict(base['networks'][0], bandwidth=up['bandwidth_GBps']['value'],
                             size=up['devices_per_domain']['value'])
  sysj['networks'][1] = dict(base['networks'][1], bandwidth=out['bandwidth_GBps']['value'])
  return sysj


def network_tiers(tp, dp, pp, domain):
  """Tier (0 = NVLink domain, 1 = scale-out) of TP, PP and DP in Megatron's rank order."""
  def fits(n):
    return n <= domain and domain % n == 0
  if not fits(tp):
    raise NotExpressible(f'TP {tp} does not fill a divisor of the {domain}-GPU NVLink domain')
  tp_net = 0 if tp > 1 else 1
  dp_inside = dp > 1 and fits(tp * dp)
  dp_net = 0 if dp_inside else 1
  inner = tp * dp if dp_inside else tp
  pp_net = 0 if pp > 1 and (dp_inside or dp == 1) and fits(inner * pp) else 1
  return tp_net, pp_net, dp_net


CALCULON_RECOMPUTE = {'none': 'none', 'selective': 'attn_only', 'full': 'full'}


def execution(r, domain, datatype, attention_type, recompute):
  tp, pp, vpp, gpus = int(r['tp']), int(r['pp']), int(r['vpp']), int(r['gpus'])
  dp = gpus // (tp * pp)
  framework = r['framework']
  if framework not in ('megatron-2021', 'megatron-core'):
    raise NotExpressible(f'framework {framework}: no Calculon execution profile written for it')
  core = framework == 'megatron-core'
  if zero_stage(r) > 2:
    raise NotExpressible(f'ZeRO-{zero_stage(r)} (FSDP): Calculon shards optimizer state and gradients, never the weights')
  tp_net, pp_net, dp_net = network_tiers(tp, dp, pp, domain)
  rec = CALCULON_RECOMPUTE[recompute]
  return {
      'num_procs': gpus, 'tensor_par': tp, 'pipeline_par': pp, 'data_par': dp,
      'tensor_par_net': tp_net, 'pipeline_par_net': pp_net, 'data_par_net': dp_net,
      'batch_size': int(r['global_batch']), 'microbatch_size': int(r['mbs']),
      'datatype': datatype, 'fused_activation': core, 'attention_type': attention_type,
      'activation_recompute': rec, 'pipeline_interleaving': vpp if pp > 1 else 1,
      'optimizer_sharding': zero_stage(r) >= 1 and dp > 1,
      'tensor_par_comm_type': 'rs_ag',
      'tensor_par_overlap': 'ring' if core and tp > 1 else 'none',
      # Megatron's sequence parallelism keeps the all-gathered input only when nothing is
      # recomputed; Calculon's validation inputs redo the all-gather with selective
      # recompute, and full recompute redoes it anyway.
      'seq_par_ag_redo': rec == 'attn_only',
      'data_par_overlap': core and dp > 1,
      'weight_offload': False, 'activations_offload': False, 'optimizer_offload': False,
      'training': True,
  }


def run_calculon(calculon, app, exe, sysj, keep_dir, tag):
  """Calculon's step statistics, or (None, its error). The calls are those of its `llm`
  command (calculon/llm/runner.py), made in this process so that Calculon is imported
  once; with --inputs the three JSON files are kept for `calculon llm` by hand."""
  if keep_dir:
    for name, obj in (('app', app), ('exe', exe), ('sys', sysj)):
      with open(os.path.join(keep_dir, f'{tag}.{name}.json'), 'w') as f:
        json.dump(obj, f, indent=2)
  llm = calculon.llm.Llm
  model = llm(llm.Application(app), logging.getLogger('calculon'))
  try:
    model.compile(calculon.System(sysj), llm.Execution.from_json(exe))
    model.run(calculon.System(sysj))
  except llm.Error as e:
    return None, str(e)
  return model.get_stats_json(False), None


def calculon_row(r, args, calculon):
  """(figures dict) for one row, or raises NotExpressible."""
  reasons = []
  if int(r['cp']) > 1:
    reasons.append(f"context parallelism (cp {r['cp']}): Calculon has no CP")
  if r.get('schedule', '') not in ('', '1f1b', 'interleaved'):
    reasons.append(f"schedule {r['schedule']}: Calculon prices (interleaved) 1F1B only")
  if int(r['ep']) > 1:
    reasons.append(f"expert parallelism (ep {r['ep']}): Calculon models dense blocks only")
  if zero_stage(r) > 2:
    reasons.append(f'ZeRO-{zero_stage(r)} (FSDP): Calculon shards optimizer state and gradients, never the weights')
  topologies = catalog_dir(args.repo, 'IBT_TOPOLOGIES_DIR', 'topologies')
  topo = load_json(os.path.join(topologies, r['topology'] + '.json'))
  if r['topology'] not in SHIPPED_SYSTEMS and ('NVIDIA' not in topo['device']['name'] or 'scale_out' not in topo):
    reasons.append(f"no Calculon system for {r['topology']} (Calculon ships A100 and H100 files; other NVIDIA "
                   "systems are written here from ibt's catalog, non-NVIDIA ones are not)")
  if reasons:
    raise NotExpressible('; '.join(reasons))
  model = load_json(os.path.join(catalog_dir(args.repo, 'IBT_MODELS_DIR', 'models'), r['model'] + '.json'))
  app, attention_type = application(model)
  if r['topology'] in SHIPPED_SYSTEMS:
    system_name = SHIPPED_SYSTEMS[r['topology']]
    sysj = load_json(os.path.join(args.calculon, system_name))
    system_name = 'calculon:' + system_name
  else:
    sysj = system_from_ibt(topo, load_json(os.path.join(topologies, 'dgx-h100.json')), args.calculon)
    system_name = 'ibt-catalog:' + r['topology']
  datatype = 'float8' if r['fp8'] == '1' else 'float16'
  if datatype not in sysj['matrix']:
    raise NotExpressible(f'{system_name} has no {datatype} rate')
  domain = sysj['networks'][0]['size']
  tries = ['none', 'selective', 'full'] if r['recompute'] == 'auto' else [r['recompute']]
  last_error = None
  for rec in tries:
    exe = execution(r, domain, datatype, attention_type, rec)
    stats, err = run_calculon(calculon, app, exe, sysj, args.inputs,
                              f"{r['model']}-{r['topology']}-{r['gpus']}-{rec}")
    if stats is None:
      last_error = err
      if 'Mem tier1' in err:
        continue  # does not fit: the next recompute
      raise NotExpressible(f'Calculon refused: {err}')
    step = stats['total_time']
    tokens = int(r['global_batch']) * app['seq_size'] / step / int(r['gpus'])
    return {'recompute': CALCULON_RECOMPUTE[rec], 'step_s': step, 'tokens_per_s_per_gpu': tokens,
            'system': system_name, 'exe': exe}
  raise NotExpressible(f'no recompute fits Calculon\'s memory model ({last_error})')


def median_abs(errors):
  return statistics.median(abs(e) for e in errors)


def summary_lines(common):
  fams = {}
  for c in common:
    fams.setdefault(c['family'], []).append(c)
  groups = [(f, fams[f]) for f in sorted(fams)] + [('overall', common)]
  shipped = [c for c in common if c.get('shipped_system', True)]
  if 0 < len(shipped) < len(common):
    groups.append(("overall, Calculon's own systems", shipped))
  out = []
  for name, rows in groups:
    ie = [c['ibt_error'] for c in rows]
    ce = [c['calculon_error'] for c in rows]
    out.append((name, len(rows), median_abs(ie), statistics.mean(ie), median_abs(ce), statistics.mean(ce)))
  return out


def fmt_fig(x):
  return f'{x:.1f}' if x < 100 else f'{x:.0f}'


def check_against_calculon_validation(r, exe, calculon_dir):
  """Calculon ships its inputs for the Korthikanti et al. 2022 runs: the generated execution
  must equal them (proof that the framework rules reproduce Calculon's own reading)."""
  names = {'megatron-22b': 'megatron-22B', 'gpt3-175b': 'gpt3-175B',
           'megatron-530b': 'turing-530B', 'megatron-1t': 'megatron-1T'}
  if r['framework'] != 'megatron-2021' or r['model'] not in names or r['recompute'] != 'selective':
    return None
  path = os.path.join(calculon_dir, 'validation', 'seqsel', 'tab5', names[r['model']] + '_seqsel.json')
  if not os.path.exists(path):
    return None
  return load_json(path) == exe


def main():
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--calculon', required=True, help='Calculon checkout')
  ap.add_argument('--commit', default='unknown', help="Calculon checkout's commit id")
  ap.add_argument('--repo', required=True, help='ibt repository root (model and topology catalogs)')
  ap.add_argument('--csv', required=True, help='published runs')
  ap.add_argument('--ibt-rows', required=True, help='validate_published.sh --rows output')
  ap.add_argument('--out', help='results CSV to write')
  ap.add_argument('--header', default='', help='comment lines for the results CSV')
  ap.add_argument('--markdown', action='store_true', help='also print both tables in Markdown (for the README)')
  ap.add_argument('--inputs', help="folder to keep Calculon's input files in (one app/exe/sys per row)")
  args = ap.parse_args()

  ibt = {row_key(r): r for r in read_csv_rows(args.ibt_rows)}
  published = read_csv_rows(args.csv)
  common, skipped, results = [], [], []
  sys.path.insert(0, args.calculon)
  logging.getLogger('calculon').setLevel(logging.WARNING)
  try:
    import calculon
    import calculon.llm
  except ImportError as e:
    sys.exit(f'calculon_side_by_side.py: cannot import Calculon from {args.calculon} ({e}); '
             'it needs numpy, pandas and psutil (Debian: python3-numpy python3-pandas python3-psutil)')
  if args.inputs:
    os.makedirs(args.inputs, exist_ok=True)
  print(f"{'family':<19} {'model':<14} {'topology':<11} {'gpus':>5} {'split':<22} "
        f"{'recompute ibt/calc':<20} {'published':>9} {'ibt':>8} {'calculon':>8} {'ibt err':>8} {'calc err':>8}")
  for r in published:
    key = row_key(r)
    mine = ibt.get(key)
    if mine is None:
      sys.exit(f'calculon_side_by_side.py: no ibt figure for {key} in {args.ibt_rows}')
    if r['vpp'] == 'auto':
      # The source does not state the virtual stages: Calculon gets the count ibt chose.
      if not mine.get('vpp_used'):
        skipped.append((r, 'vpp auto and ibt projects no fit'))
        continue
      r = dict(r, vpp=mine['vpp_used'])
    try:
      c = calculon_row(r, args, calculon)
    except NotExpressible as e:
      skipped.append((r, str(e)))
      continue
    if not mine['ibt_tokens_per_s_per_gpu']:
      skipped.append((r, 'ibt projects no fit'))
      continue
    ibt_tps, ibt_mfu = float(mine['ibt_tokens_per_s_per_gpu']), float(mine['ibt_mfu_percent'])
    # MFU under ibt's FLOP convention: ibt's FLOPs per token over ibt's peak, the same
    # for both tools, so the ratio of MFUs is the ratio of token rates.
    calc_mfu = c['tokens_per_s_per_gpu'] * ibt_mfu / ibt_tps
    value = float(r['value'])
    if r['metric'] == 'mfu_percent':
      ibt_fig, calc_fig = ibt_mfu, calc_mfu
    else:
      ibt_fig, calc_fig = ibt_tps, c['tokens_per_s_per_gpu']
    ibt_err, calc_err = ibt_fig / value - 1, calc_fig / value - 1
    same = check_against_calculon_validation(r, c['exe'], args.calculon)
    note = '' if same is None else ('  (= Calculon\'s own validation input)' if same else
                                    '  (DIFFERS from Calculon\'s own validation input)')
    split = f"tp{r['tp']} pp{r['pp']} v{r['vpp']} b{r['mbs']} gb{r['global_batch']}"
    unit = '%' if r['metric'] == 'mfu_percent' else ''
    print(f"{r['family']:<19} {r['model']:<14} {r['topology']:<11} {r['gpus']:>5} {split:<22} "
          f"{mine['recompute'] + '/' + c['recompute']:<20} {r['value'] + unit:>9} "
          f"{fmt_fig(ibt_fig) + unit:>8} {fmt_fig(calc_fig) + unit:>8} {100 * ibt_err:>+7.1f}% {100 * calc_err:>+7.1f}%"
          + ('' if c['system'].startswith('calculon:') else f"  [{c['system']}]") + note)
    common.append({'family': r['family'], 'ibt_error': ibt_err, 'calculon_error': calc_err,
                   'shipped_system': c['system'].startswith('calculon:'),
                   'markdown': f"| {r['family']} | {r['model']} | {r['topology']}{'' if c['system'].startswith('calculon:') else '*'} "
                               f"| {r['gpus']} | {split} | {mine['recompute']} / {c['recompute']} | {r['value'] + unit} "
                               f"| {fmt_fig(ibt_fig) + unit} | {fmt_fig(calc_fig) + unit} | {100 * ibt_err:+.1f}% | {100 * calc_err:+.1f}% |"})
    results.append([r['family'], r['model'], r['topology'], r['gpus'], r['tp'], r['pp'], r['vpp'],
                    r['ep'], r['cp'], r['mbs'], r['global_batch'], r['metric'], args.commit, c['system'],
                    c['recompute'], f"{c['step_s']:.4f}", f"{c['tokens_per_s_per_gpu']:.6g}",
                    f'{calc_mfu:.2f}', mine['recompute'], f'{ibt_tps:.6g}', f'{ibt_mfu:.2f}',
                    r['value'], f'{calc_fig:.6g}', f'{ibt_fig:.6g}', f'{calc_err:.4f}', f'{ibt_err:.4f}'])

  print('\nrows Calculon cannot express (not in the comparison):')
  for r, why in skipped:
    print(f"  {r['family']:<19} {r['model']:<17} {r['topology']:<11} {r['gpus']:>5}: {why}")
  if not common:
    sys.exit('calculon_side_by_side.py: no row both tools express')
  print(f'\non the {len(common)} rows both tools express (error = projected / published - 1):')
  print(f"  {'family':<31} {'rows':>4}   {'ibt median|e|':>13} {'signed mean':>11}   {'Calculon median|e|':>18} {'signed mean':>11}")
  for name, n, im, ia, cm, ca in summary_lines(common):
    print(f'  {name:<31} {n:>4}   {100 * im:>12.1f}% {100 * ia:>+10.1f}%   {100 * cm:>17.1f}% {100 * ca:>+10.1f}%')

  if args.markdown:
    print('\n| family | model | topology | GPUs | split | recompute ibt / Calculon | published | ibt | Calculon | ibt error | Calculon error |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for c in common:
      print(c['markdown'])
    print('\n| family | rows | ibt median \\|error\\| | ibt signed mean | Calculon median \\|error\\| | Calculon signed mean |')
    print('|---|---|---|---|---|---|')
    for name, n, im, ia, cm, ca in summary_lines(common):
      print(f'| {name} | {n} | {100 * im:.1f}% | {100 * ia:+.1f}% | {100 * cm:.1f}% | {100 * ca:+.1f}% |')

  if args.out:
    with open(args.out, 'w', newline='') as f:
      for line in args.header.splitlines():
        f.write('# ' + line + '\n')
      w = csv.writer(f, lineterminator='\n')
      w.writerow(['family', 'model', 'topology', 'gpus', 'tp', 'pp', 'vpp', 'ep', 'cp', 'mbs', 'global_batch',
                  'metric', 'calculon_commit', 'calculon_system', 'calculon_recompute', 'calculon_step_s',
                  'calculon_tokens_per_s_per_gpu', 'calculon_mfu_percent_ibt_flops', 'ibt_recompute',
                  'ibt_tokens_per_s_per_gpu', 'ibt_mfu_percent', 'published', 'calculon_figure', 'ibt_figure',
                  'calculon_error', 'ibt_error'])
      w.writerows(results)
      for r, why in skipped:
        f.write(f"# not expressible in Calculon: {row_key(r)}: {why}\n")
    print(f'\nwritten {args.out}')


if __name__ == '__main__':
  main()
