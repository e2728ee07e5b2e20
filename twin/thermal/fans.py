"""Fans of the cooling units (CRAH/CRAC) on the affinity laws, and rack airflow from the
servers' own fan model.

Fan laws (similar fans, same air density): airflow V ~ N, pressure dp ~ N^2, shaft power
P ~ N^3 for the speed N. At the design point the electric power is the air power over the
total efficiency, P_d = V_d dp_d / eta. A unit whose fans turn at constant speed blows
its design airflow at design power whatever the load; a variable-speed (VFD) unit follows
the airflow the room needs, down to a minimum speed, along the system curve
dp = dp_s + (dp_d - dp_s) (V / V_d)^2 (dp_s: the static pressure the controller holds,
e.g. an underfloor set point; 0 gives the pure cube law):

    P(V) = V dp(V) / eta = P_d s (f_s + (1 - f_s) s^2),   s = V / V_d,  f_s = dp_s / dp_d.

References
----------
ASHRAE Handbook - HVAC Systems and Equipment (2020), ch. 21 "Fans", fan laws (Table 2).
ASHRAE Handbook - Fundamentals (2021), ch. 21 "Duct design": system curves dp ~ V^2.
Rotron, "Understanding your system resistance" (technical note): the resistance of
electronic equipment is dp = K V^n with n close to 2; a fan delivers the airflow where its
curve meets that system curve.

Server fans in an enclosure (:func:`fan_free_delivery_airflow_m3_s`,
:func:`fan_system_airflow_m3_s`): a datasheet gives a fan's free-delivery airflow V_r at its
rated speed N_r (zero static pressure). At speed N the fan curve is the rated one scaled by
the affinity laws, dp_f(V; N) = (N / N_r)^2 F(V N_r / N); against a quadratic system curve
dp = K V^2 the operating point solves F(u) = K u^2 with u = V N_r / N, whose root u* does
not depend on N. So the airflow through a server is V = phi n V_r N / N_r at every speed,
with phi = u* / V_r (0 < phi < 1) a property of fan and enclosure together: one number per
server model.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "crah_airflow_m3_s",
    "crah_fan_power_w",
    "fan_design_power_w",
    "fan_free_delivery_airflow_m3_s",
    "fan_system_airflow_m3_s",
    "linear_fan_curve_system_flow_fraction",
    "rack_airflow_from_fans_m3_s",
    "system_flow_fraction",
]


def fan_design_power_w(design_airflow_m3_s, design_pressure_pa, fan_efficiency):
    """Electric power of a fan at its design point [W]: P_d = V_d dp_d / eta.

    Example: a 10 m3/s CRAH against 500 Pa at 65 % total efficiency draws 7.7 kW.
    """
    return np.asarray(design_airflow_m3_s, float) * np.asarray(design_pressure_pa, float) / np.asarray(
        fan_efficiency, float)


def crah_airflow_m3_s(required_m3_s, design_airflow_m3_s, *, control="vfd", min_speed_fraction=0.3):
    """Airflow a cooling unit blows [m3/s].

    ``control = "constant"``: the design airflow, always. ``"vfd"``: the airflow the room
    requires (e.g. the unit's share of the rack airflow times an over-provisioning ratio),
    clipped to [min_speed_fraction, 1] x design.
    """
    v_d = np.asarray(design_airflow_m3_s, float)
    if control == "constant":
        return np.broadcast_to(v_d, np.broadcast_shapes(v_d.shape, np.shape(required_m3_s))).copy()
    if control != "vfd":
        raise ValueError(f"fan control must be 'constant' or 'vfd', got {control!r}")
    # np.clip's definition, min(max(x, lo), hi), without its dispatch (a per-sample call)
    return np.minimum(np.maximum(np.asarray(required_m3_s, float), min_speed_fraction * v_d), v_d)


def crah_fan_power_w(airflow_m3_s, design_airflow_m3_s, design_pressure_pa, fan_efficiency, *,
                     control="vfd", static_pressure_fraction=0.0, design_power_w=None):
    """Electric fan power of a cooling unit at an airflow [W] (affinity laws).

    constant speed: P = P_d (the unit always runs at its design point);
    VFD: P = P_d s (f_s + (1 - f_s) s^2) with s = V / V_d and f_s the share of the design
    pressure the controller holds at any flow (0: cube law P = P_d s^3). A stopped unit
    (V = 0) draws nothing. ``design_power_w``: P_d when the caller keeps it (it must be
    :func:`fan_design_power_w` of the same design airflow, pressure and efficiency).
    """
    v = np.asarray(airflow_m3_s, float)
    p_d = (fan_design_power_w(design_airflow_m3_s, design_pressure_pa, fan_efficiency)
           if design_power_w is None else design_power_w)
    if control == "constant":
        return np.where(v > 0, p_d, 0.0)
    if control != "vfd":
        raise ValueError(f"fan control must be 'constant' or 'vfd', got {control!r}")
    s = v / np.asarray(design_airflow_m3_s, float)
    f_s = float(static_pressure_fraction)
    return p_d * s * (f_s + (1.0 - f_s) * s**2)


def rack_airflow_from_fans_m3_s(node_heat_w, inlet_temp_c, *, nodes_per_rack, design_heat_w,
                                airflow_max_m3_s, fan_min_speed_fraction=None, fan_control_temp_c=None,
                                fan_design_inlet_c=None, powered=None):
    """Rack airflow [m3/s] from the servers' fan controller at a load and inlet temperature.

    Each node's fans turn at s = clip(Q / Q_d (T_ctl - T_d) / (T_ctl - T_in), s_min, 1)
    (:func:`twin.power.node.node_fan_speed_fraction`, the twin's one fan-control law) and
    move V = V_max s (affinity law); a rack of n nodes moves n V. node_heat_w (R,) [W] is
    the DC heat of one node of each rack (GPU + host), inlet_temp_c (R,) [C].
    powered (R,) bool, optional: False where the node is off (not delivered, powered off,
    unfed, tripped, shut down, failed): its fans stand still and it moves no air, V = 0,
    as :func:`twin.power.node.node_dc_power_w` bills them no fan power (the fan law alone
    would clip an off node's zero heat to the minimum speed). The small leak a stopped
    server lets through under the room's pressure differences is not modelled. None: every
    node powered.
    """
    law = _NODE_FAN_LAW or _node_fan_law()
    speed = law[0](node_heat_w, inlet_temp_c, design_heat_w=design_heat_w,
                   fan_min_speed_fraction=law[2] if fan_min_speed_fraction is None else fan_min_speed_fraction,
                   fan_control_temp_c=law[3] if fan_control_temp_c is None else fan_control_temp_c,
                   fan_design_inlet_c=law[4] if fan_design_inlet_c is None else fan_design_inlet_c)
    v = nodes_per_rack * law[1](speed, airflow_max_m3_s=airflow_max_m3_s)
    if powered is not None:
        v = np.where(np.asarray(powered, bool), v, 0.0)
    return v


#: (node_fan_speed_fraction, node_airflow_m3_s, FAN_MIN_SPEED_FRACTION, FAN_CONTROL_TEMP_C,
#: FAN_DESIGN_INLET_C) of :mod:`twin.power.node`, imported on first use (twin.power imports
#: this package) and kept: :func:`rack_airflow_from_fans_m3_s` runs at every physics sample
_NODE_FAN_LAW: tuple = ()


def _node_fan_law() -> tuple:
    global _NODE_FAN_LAW
    from twin.power.node import (
        FAN_CONTROL_TEMP_C,
        FAN_DESIGN_INLET_C,
        FAN_MIN_SPEED_FRACTION,
        node_airflow_m3_s,
        node_fan_speed_fraction,
    )

    _NODE_FAN_LAW = (node_fan_speed_fraction, node_airflow_m3_s, FAN_MIN_SPEED_FRACTION, FAN_CONTROL_TEMP_C,
                     FAN_DESIGN_INLET_C)
    return _NODE_FAN_LAW


def fan_free_delivery_airflow_m3_s(fan_rpm, *, rated_airflow_m3_s, rated_rpm, fans=1):
    """Free-delivery airflow of ``fans`` identical fans at a speed [m3/s] (affinity law).

    V_free = n V_r N / N_r, with V_r the datasheet's free-delivery (zero static pressure)
    airflow at the rated speed N_r [rpm]. Example: two Delta PFR0812DHE (109.7 CFM =
    0.05177 m3/s at 11,000 rpm) at 2,000 rpm move 0.01883 m3/s in free air.
    """
    return fans * float(rated_airflow_m3_s) * np.asarray(fan_rpm, float) / float(rated_rpm)


def fan_system_airflow_m3_s(fan_rpm, *, rated_airflow_m3_s, rated_rpm, system_flow_fraction, fans=1):
    """Airflow the fans move through their enclosure at a speed [m3/s]: V = phi V_free.

    phi = V / V_free at the operating point, the same at every speed when the enclosure's
    resistance is quadratic (module docstring); V_free from
    :func:`fan_free_delivery_airflow_m3_s`.
    """
    free = fan_free_delivery_airflow_m3_s(fan_rpm, rated_airflow_m3_s=rated_airflow_m3_s,
                                          rated_rpm=rated_rpm, fans=fans)
    return float(system_flow_fraction) * free


def linear_fan_curve_system_flow_fraction(shutoff_pressure_pa, free_airflow_m3_s, system_k_pa_s2_m6):
    """phi = V / V_free of a fan with a straight curve dp = dp_0 (1 - V / V_0) against a
    system dp = K V^2 [-]: the positive root of K V^2 + (dp_0 / V_0) V - dp_0 = 0 over V_0,

        phi = (sqrt(a^2 + 4 K dp_0) - a) / (2 K V_0),  a = dp_0 / V_0.

    A closed form to check the speed independence of phi (a real fan curve is not straight).
    """
    dp0, v0, k = float(shutoff_pressure_pa), float(free_airflow_m3_s), float(system_k_pa_s2_m6)
    a = dp0 / v0
    return (np.sqrt(a * a + 4.0 * k * dp0) - a) / (2.0 * k * v0)


def system_flow_fraction(system_airflow_m3_s, free_airflow_m3_s):
    """phi fitted to measured airflows [-]: the total measured airflow over the total
    free-delivery airflow of the same fans, phi = sum V_meas / sum V_free (so that the
    fitted racks carry their measured air in total)."""
    return float(np.sum(system_airflow_m3_s) / np.sum(free_airflow_m3_s))
