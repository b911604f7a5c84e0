#!/usr/bin/env python3
"""Writes the seed corpus of the config_yaml fuzz target.

usage: make_fuzz_seeds.py   (run from anywhere; rewrites fuzz_corpus/config_yaml)
The seeds are the two examples, a config setting every key, and broken
variants that reach each kind of error.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'fuzz_corpus', 'config_yaml')

MINIMAL = ('version: 1\nports:\n  - name: p0\n    vdev: net_null0\n'
           'workers:\n  lcores: [1]\n')

EVERY_KEY = (
    'version: 1\n'
    'eal: {main_lcore: 3, memory_mb: 1024, hugepages: off, file_prefix: a-1,'
    ' extra_args: [--iova-mode=pa, "x y"]}\n'
    'ports:\n'
    '  - {name: Nic_1, pci: 03:1F.7, mtu: 9600, rx_queues: 4, tx_queues: 2,\n'
    '     rx_descriptors: 64, tx_descriptors: 4096, promiscuous: TRUE}\n'
    '  - {name: t, vdev: "net_tap1,iface=x"}\n'
    'interfaces:\n'
    '  - {port: Nic_1, ipv4: 10.1.2.3/31, gateway: 10.1.2.2}\n'
    '  - {port: t, ipv4: 10.9.0.7/32}\n'
    'workers: {lcores: [0, 5], burst: 256, idle_sleep_us: 10000}\n'
    'mempools: {mbufs: 65535, cache: 0, data_room: 65535}\n'
    'arp: {cache_entries: 16, timeout_s: 86400, pending_packets: 1, retry_ms: 10}\n'
    'logging: {level: debug}\n'
    'telemetry: {enabled: false}\n')

IMPAIRMENT = (
    'version: 1\nports:\n  - name: p0\n    vdev: net_null0\n    impairment:\n'
    '      seed: 3\n'
    '      rx:\n'
    '        - {action: drop, protocol: tcp, port: 7, every: 10, first: 2, last: 90}\n'
    '        - {action: corrupt, min_payload: 1, checksum: fixed, probability_ppm: 10000}\n'
    '      tx:\n'
    '        - {action: delay, delay_ms: 5}\n'
    '        - {action: reorder, reorder_gap: 4}\n'
    '        - {action: duplicate, protocol: udp}\n'
    'workers:\n  lcores: [1]\n')

IWARP = (
    MINIMAL +
    'iwarp: {qps_per_service: 2, revision: 1, enhanced: false, ird: 4, ord: 8,'
    ' rtr_types: [send, read], max_private_data: 512, request_timeout_ms: 1,'
    ' reply_timeout_ms: 2, rtr_timeout_ms: 3, sq_depth: 64, rq_depth: 32, cq_depth: 96,'
    ' scratch_bytes: 0, recv_buffers: 32, recv_buffer_bytes: 16777216}\n'
    'services:\n'
    '  - {name: r, type: iwarp_responder, port: 9999, crc: false, markers: true}\n'
    '  - {name: c, type: iwarp_client, remote: 198.18.0.2, remote_port: 9999, op: mixed,'
    ' message_bytes: 0, count: 7, queue_depth: 4, verify: false, start_delay_ms: 5}\n')

BROKEN = {
    'iwarp_rtr_twice': MINIMAL + 'iwarp: {rtr_types: [read, read]}\n',
    'iwarp_queues': MINIMAL + 'iwarp: {recv_buffers: 200, cq_depth: 100}\n',
    'iwarp_client_depth': MINIMAL + 'services: [{name: c, type: iwarp_client, remote: 198.18.0.2,'
                          ' remote_port: 1, queue_depth: 64}]\n',
    'empty': '',
    'comment_only': '# nothing\n',
    'not_a_map': '- 1\n- 2\n',
    'two_documents': MINIMAL + '---\n' + MINIMAL,
    'syntax_flow': 'version: 1\nports: [\n  {name: a}\nworkers: x\n',
    'syntax_indent': 'version: 1\n  eal: 2\n',
    'tab_indent': 'version: 1\nports:\n\t- name: p0\n',
    'version_2': 'version: 2\n',
    'version_quoted': 'version: "1"\n' + MINIMAL[len('version: 1\n'):],
    'unknown_top': MINIMAL + 'telemetri: {}\n',
    'unknown_nested': MINIMAL + 'eal:\n  hugepage: on\n',
    'duplicate_key': MINIMAL + 'workers: {lcores: [2]}\n',
    'bad_int': MINIMAL + 'eal: {memory_mb: 0x100}\n',
    'huge_int': MINIMAL + 'eal: {main_lcore: 99999999999999999999999}\n',
    'quoted_int': MINIMAL + 'eal: {memory_mb: "256"}\n',
    'both_devices': 'version: 1\nports: [{name: a, vdev: net_null0, pci: 00:01.0}]\n'
                    'workers: {lcores: [1]}\n',
    'no_device': 'version: 1\nports: [{name: a}]\nworkers: {lcores: [1]}\n',
    'dup_port': 'version: 1\nports: [{name: a, vdev: net_null0}, {name: a, vdev: net_null1}]\n'
                'workers: {lcores: [1]}\n',
    'unknown_port': MINIMAL + 'interfaces: [{port: zz, ipv4: 198.18.0.1/24}]\n',
    'bad_prefix': MINIMAL + 'interfaces: [{port: p0, ipv4: 198.18.0.1/33}]\n',
    'gateway_outside': MINIMAL + 'interfaces: [{port: p0, ipv4: 198.18.0.1/24,'
                                 ' gateway: 198.19.0.1}]\n',
    'overlap': MINIMAL + 'interfaces: [{port: p0, ipv4: 10.0.0.1/8}, {port: p0, ipv4: 10.1.0.1/16}]\n',
    'lcore_is_main': 'version: 1\nports: [{name: a, vdev: net_null0}]\nworkers: {lcores: [0]}\n',
    'lcore_twice': 'version: 1\nports: [{name: a, vdev: net_null0}]\nworkers: {lcores: [1, 1]}\n',
    'too_few_mbufs': MINIMAL + 'mempools: {mbufs: 1024}\n',
    'bad_enum': MINIMAL + 'logging: {level: verbose}\n',
    'bad_bool': MINIMAL + 'telemetry: {enabled: yes}\n',
    'aliases': MINIMAL + 'eal: {memory_mb: &m 100}\narp: {retry_ms: *m, timeout_s: *m}\n',
    'complex_key': MINIMAL + '? [a]\n: 1\n',
    'deep_nesting': MINIMAL + 'eal: {extra_args: ' + '[' * 300 + ']' * 300 + '}\n',
    'escapes': MINIMAL + 'eal: {extra_args: ["\\x00\\t\\u2028", \'a"b\\\\c\']}\n',
    'yaml_cpp_loop': ',c',  # yaml-cpp 0.7 loops on this without the event budget
    'binary': '\x00\xff\xfe\x01version: 1\n',
}


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {'minimal': MINIMAL, 'every_key': EVERY_KEY, 'impairment': IMPAIRMENT, 'iwarp': IWARP}
    for name in ('default', 'reference', 'iwarp-responder'):
        with open(os.path.join(HERE, 'examples', name + '.yaml'), encoding='utf-8') as f:
            seeds[name] = f.read()
    seeds.update(BROKEN)
    for name, text in sorted(seeds.items()):
        with open(os.path.join(OUT, name + '.yaml'), 'wb') as f:
            f.write(text.encode('latin-1') if name == 'binary' else text.encode('utf-8'))


if __name__ == '__main__':
    main()
