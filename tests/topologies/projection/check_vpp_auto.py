#!/usr/bin/env python3
"""Checks scripts/validate_published.sh's vpp "auto" rule (its header states it): of the vpp
>= 2 dividing the layers per pipeline rank (rounded up) that ibt accepts, the fastest whose
memory fits; where none fits, the fastest, reported as not fitting. Each case is checked
against `ibt project` run here at every candidate, not against figures written down.
  check_vpp_auto.py REPO BUILD_DIR"""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

REPO, BUILD = sys.argv[1], sys.argv[2]
NO_BANDS = tempfile.TemporaryDirectory()  # projections without bands, as the script runs them
SCRIPT = os.path.join(REPO, 'scripts', 'validate_published.sh')
HEADER = ('family,model,topology,gpus,tp,pp,vpp,schedule,ep,cp,mbs,global_batch,recompute,zero,fp8,'
          'framework,metric,value,source\n')


def run_rows(row):
  """validate_published.sh --in-sample --rows on one CSV row; (process, rows read back)."""
  with tempfile.TemporaryDirectory() as d:
    one, out = os.path.join(d, 'one.csv'), os.path.join(d, 'rows.csv')
    with open(one, 'w') as f:
      f.write(HEADER + row + '\n')
    p = subprocess.run([SCRIPT, BUILD, '--csv', one, '--rows', out, '--in-sample'], capture_output=True, text=True)
    rows = []
    if p.returncode == 0:
      with open(out) as f:
        rows = list(csv.DictReader(f))
  return p, rows


def project(model, gpus, tp, pp, vpp, gb, rec, zero):
  """(fits, tokens/s) of `ibt project` at one interleaved split on dgx-h100."""
  env = dict(os.environ, IBT_VALIDATION_DIR=NO_BANDS.name)
  out = subprocess.run([os.path.join(BUILD, 'ibt'), 'project', '--model', model, '--topology', 'dgx-h100',
                        '--gpus', str(gpus), '--tp', str(tp), '--pp', str(pp), '--ep', '1', '--cp', '1',
                        '--micro-batch-size', '1', '--global-batch', str(gb), '--schedule', 'interleaved',
                        '--vpp', str(vpp), '--recompute', rec, '--zero', str(zero), '--framework', 'megatron-core'],
                       capture_output=True, text=True, env=env, check=True).stdout
  tps = next(float(line.split()[1]) for line in out.splitlines() if line.startswith('throughput'))
  return not any(line.startswith('DOES NOT FIT') for line in out.splitlines()), tps


class VppAuto(unittest.TestCase):
  def check(self, model, gpus, tp, pp, gb, rec, zero, candidates):
    p, rows = run_rows(f'fam,{model},dgx-h100,{gpus},{tp},{pp},auto,interleaved,1,1,1,{gb},{rec},{zero},0,'
                       'megatron-core,tokens_per_s_per_gpu,100,test row')
    self.assertEqual(p.returncode, 0, p.stderr)
    self.assertEqual(rows[0]['vpp'], 'auto')  # the key stays the CSV's
    got = {v: project(model, gpus, tp, pp, v, gb, rec, zero) for v in candidates}
    fitting = [v for v in candidates if got[v][0]]
    want = max(fitting or candidates, key=lambda v: got[v][1])
    self.assertEqual(rows[0]['vpp_used'], str(want), got)
    self.assertAlmostEqual(float(rows[0]['ibt_tokens_per_s_per_gpu']), got[want][1] / gpus, delta=0.01 * got[want][1] / gpus)
    return got

  def test_layers_divide_by_pp(self):
    # Nemotron-4 340B: 96 layers on 12 stages, 8 per rank: candidates 2, 4, 8.
    self.check('nemotron4-340b', 6144, 8, 12, 2304, 'none', 1, [2, 4, 8])

  def test_uneven_layers_and_nothing_fits(self):
    # Llama 3 405B: 126 layers on 16 stages, 8 per rank rounded up; 8 x 16 > 126 leaves 2, 4.
    # At 8,192 GPUs without recompute neither fits: the fastest is priced.
    got = self.check('llama3-405b', 8192, 8, 16, 2048, 'none', 2, [2, 4])
    self.assertFalse(any(fits for fits, _ in got.values()), got)

  def test_needs_the_interleaved_schedule(self):
    p, _ = run_rows('fam,nemotron4-340b,dgx-h100,6144,8,12,auto,1f1b,1,1,1,2304,none,1,0,'
                    'megatron-core,tokens_per_s_per_gpu,100,test row')
    self.assertNotEqual(p.returncode, 0)
    self.assertIn('vpp auto needs the interleaved schedule', p.stderr)


if __name__ == '__main__':
  unittest.main(argv=sys.argv[:1], verbosity=2)
