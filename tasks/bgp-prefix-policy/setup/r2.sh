#!/bin/bash
# r2, the customer's router (AS 65020): its prefixes on the loopback, a session towards
# r1 (AS {{ asn }}) that announces them, a prefix it should not announce and a default
# route; no policy of its own. Saved.
set -eu
vtysh -c 'configure terminal' \
  -c 'interface lo' -c 'ip address 10.20.1.1/24' -c 'ip address 10.20.2.1/24' -c 'ip address 172.16.50.1/24' -c 'exit' \
  -c 'router bgp 65020' -c 'bgp router-id 10.255.0.2' -c 'no bgp ebgp-requires-policy' \
  -c 'neighbor 10.0.12.1 remote-as {{ asn }}' \
  -c 'address-family ipv4 unicast' -c 'network 10.20.1.0/24' -c 'network 10.20.2.0/24' \
  -c 'network 172.16.50.0/24' -c 'neighbor 10.0.12.1 default-originate' -c 'exit-address-family' \
  -c 'end' -c 'write memory'
