"""tfk8s policy pack: `pulumi preview --stack <s> --policy-pack policy`.

Constructing PolicyPack starts the analyzer server and serves forever, so
tests import tfk8s_policies, never this module.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from tfk8s_policies import POLICIES

PolicyPack(name="tfk8s", enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
