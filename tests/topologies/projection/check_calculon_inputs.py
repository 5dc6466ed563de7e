#!/usr/bin/env python3
"""Checks how scripts/calculon_side_by_side.py states published runs in Calculon's input
format (no Calculon checkout needed), that scripts/compare_calculon.sh without one exits 0
saying so, and that scripts/validate_published.sh --rows writes the columns the helper reads.
  check_calculon_inputs.py REPO BUILD_DIR"""

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO, BUILD = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(REPO, 'scripts'))
import calculon_side_by_side as cs  # noqa: E402


def catalog_model(name):
  with open(os.path.join(REPO, 'models', 'catalog', name + '.json')) as f:
    return json.load(f)


def published_row(**overrides):
  row = {'family': 'f', 'model': 'megatron-22b', 'topology': 'dgx-a100', 'gpus': '8', 'tp': '8',
         'pp': '1', 'vpp': '1', 'ep': '1', 'cp': '1', 'mbs': '4', 'global_batch': '4',
         'recompute': 'selective', 'zero1': '0', 'fp8': '0', 'framework': 'megatron-2021'}
  row.update(overrides)
  return row


class Application(unittest.TestCase):
  def test_gpt_block_as_is(self):
    app, attention = cs.application(catalog_model('megatron-22b'))
    # Calculon's own models/megatron-22B.json states the same block.
    self.assertEqual(app, {'hidden': 6144, 'feedforward': 24576, 'seq_size': 2048,
                           'attn_heads': 64, 'attn_size': 96, 'num_blocks': 48})
    self.assertEqual(attention, 'multihead')

  def test_swiglu_keeps_weights_and_gqa_is_multiquery(self):
    app, attention = cs.application(catalog_model('llama3-70b'))
    self.assertEqual(app['feedforward'], 28672 * 3 // 2)  # three h x f GEMMs as two h x 1.5f
    self.assertEqual(attention, 'multiquery')

  def test_moe_and_mla_refused(self):
    with self.assertRaisesRegex(cs.NotExpressible, 'mixture of experts'):
      cs.application(catalog_model('deepseek-v3'))
    model = dict(catalog_model('llama2-7b'), attention='mla')
    with self.assertRaisesRegex(cs.NotExpressible, 'mla attention'):
      cs.application(model)


class Networks(unittest.TestCase):
  def test_megatron_rank_order(self):
    # (tp, pp, dp nets): tier 0 is the NVLink domain
    self.assertEqual(cs.network_tiers(8, 1, 8, 8), (0, 1, 1))    # TP fills the node
    self.assertEqual(cs.network_tiers(4, 2, 8, 8), (0, 1, 0))    # TP4 x DP2 in the node
    self.assertEqual(cs.network_tiers(4, 4, 8, 8), (0, 1, 1))    # DP4 does not fit beside TP4
    self.assertEqual(cs.network_tiers(1, 8, 1, 8), (1, 1, 0))    # pure DP in the node
    self.assertEqual(cs.network_tiers(1, 4, 4, 8), (1, 1, 0))    # PP crosses nodes
    self.assertEqual(cs.network_tiers(2, 2, 2, 8), (0, 0, 0))    # everything in one node
    self.assertEqual(cs.network_tiers(4, 4, 16, 72), (0, 1, 1))  # 16 does not divide 72
    with self.assertRaisesRegex(cs.NotExpressible, 'NVLink domain'):
      cs.network_tiers(16, 1, 1, 8)


class SystemFromCatalog(unittest.TestCase):
  def test_rates_from_ibt_curves_from_calculon(self):
    curve = [[1, 0.5], [0, 0.1]]
    net = {'bandwidth': 1, 'efficiency': 0.5, 'size': 8, 'latency': 1e-5, 'ops': {},
           'must_be_filled': True, 'processor_usage': 0.1}
    base = {'matrix': {'float16': {'tflops': 1000, 'gflops_efficiency': curve}},
            'vector': {'float16': {'tflops': 120, 'gflops_efficiency': curve}},
            'mem1': {'GiB': 80, 'GBps': 3072, 'MB_efficiency': curve}, 'mem2': {},
            'processing_mode': 'no_overlap', 'networks': [net, dict(net, size=65536)]}
    with tempfile.TemporaryDirectory() as calculon:
      os.makedirs(os.path.join(calculon, 'systems'))
      with open(os.path.join(calculon, cs.CURVES_FROM), 'w') as f:
        json.dump(base, f)
      catalog = os.path.join(REPO, 'topologies', 'catalog')
      with open(os.path.join(catalog, 'gb200-nvl72.json')) as f:
        topo = json.load(f)
      with open(os.path.join(catalog, 'dgx-h100.json')) as f:
        h100 = json.load(f)
      got = cs.system_from_ibt(topo, h100, calculon)
    self.assertEqual(got['matrix']['float16'], {'tflops': 2500, 'gflops_efficiency': curve})
    self.assertEqual(got['matrix']['float8']['tflops'], 5000)
    self.assertAlmostEqual(got['vector']['float8']['tflops'], round(120 * 80 / 67, 1))
    self.assertAlmostEqual(got['mem1']['GiB'], 186e9 / 1024 ** 3)
    self.assertEqual(got['mem1']['GBps'], 8000)
    self.assertEqual((got['networks'][0]['bandwidth'], got['networks'][0]['size'], got['networks'][0]['efficiency']),
                     (900, 72, 0.5))
    self.assertEqual((got['networks'][1]['bandwidth'], got['networks'][1]['size']), (50, 65536))


class Execution(unittest.TestCase):
  def test_megatron_2021_is_calculons_validation_input(self):
    # Calculon's validation/seqsel/tab5/megatron-22B_seqsel.json, field by field.
    expected = {'num_procs': 8, 'tensor_par': 8, 'pipeline_par': 1, 'data_par': 1,
                'tensor_par_net': 0, 'pipeline_par_net': 1, 'data_par_net': 1, 'batch_size': 4,
                'microbatch_size': 4, 'datatype': 'float16', 'fused_activation': False,
                'attention_type': 'multihead', 'activation_recompute': 'attn_only',
                'pipeline_interleaving': 1, 'optimizer_sharding': False,
                'tensor_par_comm_type': 'rs_ag', 'tensor_par_overlap': 'none',
                'seq_par_ag_redo': True, 'data_par_overlap': False, 'weight_offload': False,
                'activations_offload': False, 'optimizer_offload': False, 'training': True}
    self.assertEqual(cs.execution(published_row(), 8, 'float16', 'multihead', 'selective'), expected)

  def test_megatron_core_overlaps_and_shards(self):
    row = published_row(model='llama3-70b', topology='dgx-h100', gpus='64', tp='4', pp='8', vpp='5',
                        mbs='1', global_batch='128', zero='1', fp8='1', framework='megatron-core')
    exe = cs.execution(row, 8, 'float8', 'multiquery', 'full')
    self.assertEqual((exe['tensor_par_overlap'], exe['data_par_overlap'], exe['optimizer_sharding'],
                      exe['fused_activation'], exe['pipeline_interleaving'], exe['data_par']),
                     ('ring', True, True, True, 5, 2))
    self.assertEqual((exe['activation_recompute'], exe['seq_par_ag_redo']), ('full', False))

  def test_older_zero1_column_and_zero3_refused(self):
    row = published_row(gpus='16', zero1='1')
    self.assertTrue(cs.execution(row, 8, 'float16', 'multihead', 'none')['optimizer_sharding'])
    with self.assertRaisesRegex(cs.NotExpressible, 'ZeRO-3'):
      cs.execution(published_row(gpus='16', zero='3'), 8, 'float16', 'multihead', 'none')

  def test_unknown_framework_refused(self):
    with self.assertRaisesRegex(cs.NotExpressible, 'maxtext'):
      cs.execution(published_row(framework='maxtext'), 8, 'float16', 'multihead', 'none')


class Summary(unittest.TestCase):
  def test_median_and_signed_mean(self):
    rows = [{'family': 'a', 'ibt_error': -0.1, 'calculon_error': 0.3},
            {'family': 'a', 'ibt_error': 0.2, 'calculon_error': -0.1},
            {'family': 'b', 'ibt_error': 0.05, 'calculon_error': 0.0}]
    lines = {name: rest for name, *rest in cs.summary_lines(rows)}
    self.assertEqual(lines['a'][0], 2)
    self.assertAlmostEqual(lines['a'][1], 0.15)   # median |ibt error|
    self.assertAlmostEqual(lines['a'][2], 0.05)   # signed mean
    self.assertAlmostEqual(lines['overall'][1], 0.1)
    self.assertAlmostEqual(lines['overall'][3], 0.1)  # median |Calculon error| of 0.3, 0.1, 0


class Scripts(unittest.TestCase):
  def test_without_a_checkout_says_so_and_exits_0(self):
    with tempfile.TemporaryDirectory() as empty:
      p = subprocess.run([os.path.join(REPO, 'scripts', 'compare_calculon.sh'), empty],
                         capture_output=True, text=True)
    self.assertEqual(p.returncode, 0, p.stderr)
    self.assertIn('no Calculon checkout', p.stdout)

  def test_validate_published_rows_columns(self):
    src = os.path.join(REPO, 'topologies', 'validation', 'published-runs.csv')
    with open(src) as f:
      lines = [line for line in f if not line.startswith('#')]
    header = lines[0]
    a100 = [line for line in lines if line.startswith('a100-megatron-2022,megatron-22b,')]
    self.assertEqual(len(a100), 1)
    with tempfile.TemporaryDirectory() as d:
      one = os.path.join(d, 'one.csv')
      with open(one, 'w') as f:
        f.write(header + a100[0])
      rows = os.path.join(d, 'rows.csv')
      p = subprocess.run([os.path.join(REPO, 'scripts', 'validate_published.sh'), BUILD,
                          '--csv', one, '--rows', rows], capture_output=True, text=True)
      self.assertEqual(p.returncode, 0, p.stderr)
      got = cs.read_csv_rows(rows)
    self.assertEqual(len(got), 1)
    r = got[0]
    self.assertEqual(cs.row_key(r), cs.row_key(next(csv.DictReader(io.StringIO(header + a100[0])))))
    self.assertEqual(r['recompute'], 'selective')
    self.assertGreater(float(r['ibt_tokens_per_s_per_gpu']), 0)
    self.assertGreater(float(r['ibt_mfu_percent']), 0)
    self.assertAlmostEqual(float(r['ibt_error']), float(r['ibt_tokens_per_s_per_gpu']) / 930.9 - 1, places=3)


if __name__ == '__main__':
  unittest.main(argv=sys.argv[:1], verbosity=2)
