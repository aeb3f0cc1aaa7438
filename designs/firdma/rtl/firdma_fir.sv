// firdma FIR datapath (golden): one tap per cycle, NTAPS + 4 cycles a sample.
//   y[n] = sat16((sum_{k<NTAPS} COEF[k] * x[n-k] + rnd) >>> SHIFT), rnd = SHIFT ? 1 << (SHIFT-1) : 0
// For timing, the running sum stays in carry-save form (acc_s + acc_c): each tap adds the 16
// partial products of COEF[k] * x[n-k] through a tree of 3:2 compressors with no carry
// propagation. The rounding constant is the initial value of acc_s. After the last tap the two
// halves of the sum are resolved in two cycles (a registered carry between them), then shifted
// and saturated. The accumulator is wide enough that nothing overflows.
`default_nettype none
module firdma_fir #(
    parameter int NTAPS = 16
) (
    input  wire                 clk,
    input  wire                 rst_n,
    input  wire                 clear,      // pulse at job start: x[m<0] = 0
    input  wire [NTAPS*16-1:0]  coefs,
    input  wire [4:0]           shift,
    input  wire                 in_valid,
    input  wire [15:0]          in_data,
    output wire                 in_ready,
    output reg                  out_valid,
    output reg  [15:0]          out_data,
    input  wire                 out_ready
);
    localparam int ACC_W = 33 + $clog2(NTAPS);
    localparam int LO_W = ACC_W / 2;
    localparam int HI_W = ACC_W - LO_W;
    localparam int KW = (NTAPS > 1) ? $clog2(NTAPS) : 1;
    localparam logic [2:0] S_IDLE = 3'd0, S_MAC = 3'd1, S_RES_LO = 3'd2, S_RES_HI = 3'd3, S_FIN = 3'd4;

    reg [15:0]       hist [NTAPS];   // hist[k] = x[n-k]
    reg [2:0]        state;
    reg [KW-1:0]     k;
    reg [ACC_W-1:0]  acc_s, acc_c;   // the sum is acc_s + acc_c (mod 2^ACC_W)
    reg [LO_W-1:0]   sum_lo;
    reg              carry_lo;
    reg [ACC_W-1:0]  sum;

    assign in_ready = (state == S_IDLE);

    wire [15:0] coef_k = coefs[k*16 +: 16];
    wire [15:0] x_k = hist[k];
    wire [ACC_W-1:0] coef_ext = {{(ACC_W-16){coef_k[15]}}, coef_k};
    wire [ACC_W-1:0] rnd = (shift == 5'd0) ? '0 : (ACC_W'(1) << (shift - 5'd1));

    // 19 operands: partial products x[i]*COEF*2^i (i < 15); -x[15]*COEF*2^15 as its one's
    // complement plus a 1; the carry-save accumulator.
    logic [ACC_W-1:0] op [19];
    always @(*) begin
        for (int i = 0; i < 15; i++) op[i] = x_k[i] ? (coef_ext << i) : '0;
        op[15] = x_k[15] ? ~(coef_ext << 15) : '0;
        op[16] = {{(ACC_W-1){1'b0}}, x_k[15]};
        op[17] = acc_s;
        op[18] = acc_c;
    end

    // 3:2 compressor tree, 19 -> 2 in six levels (13, 9, 6, 4, 3, 2 operands).
    logic [ACC_W-1:0] l1 [13];
    logic [ACC_W-1:0] l2 [9];
    logic [ACC_W-1:0] l3 [6];
    logic [ACC_W-1:0] l4 [4];
    logic [ACC_W-1:0] l5 [3];
    logic [ACC_W-1:0] next_s, next_c;
    always @(*) begin
        for (int j = 0; j < 6; j++) begin
            l1[2*j]   = op[3*j] ^ op[3*j+1] ^ op[3*j+2];
            l1[2*j+1] = ((op[3*j] & op[3*j+1]) | (op[3*j] & op[3*j+2]) | (op[3*j+1] & op[3*j+2])) << 1;
        end
        l1[12] = op[18];
        for (int j = 0; j < 4; j++) begin
            l2[2*j]   = l1[3*j] ^ l1[3*j+1] ^ l1[3*j+2];
            l2[2*j+1] = ((l1[3*j] & l1[3*j+1]) | (l1[3*j] & l1[3*j+2]) | (l1[3*j+1] & l1[3*j+2])) << 1;
        end
        l2[8] = l1[12];
        for (int j = 0; j < 3; j++) begin
            l3[2*j]   = l2[3*j] ^ l2[3*j+1] ^ l2[3*j+2];
            l3[2*j+1] = ((l2[3*j] & l2[3*j+1]) | (l2[3*j] & l2[3*j+2]) | (l2[3*j+1] & l2[3*j+2])) << 1;
        end
        for (int j = 0; j < 2; j++) begin
            l4[2*j]   = l3[3*j] ^ l3[3*j+1] ^ l3[3*j+2];
            l4[2*j+1] = ((l3[3*j] & l3[3*j+1]) | (l3[3*j] & l3[3*j+2]) | (l3[3*j+1] & l3[3*j+2])) << 1;
        end
        l5[0] = l4[0] ^ l4[1] ^ l4[2];
        l5[1] = ((l4[0] & l4[1]) | (l4[0] & l4[2]) | (l4[1] & l4[2])) << 1;
        l5[2] = l4[3];
        next_s = l5[0] ^ l5[1] ^ l5[2];
        next_c = ((l5[0] & l5[1]) | (l5[0] & l5[2]) | (l5[1] & l5[2])) << 1;
    end

    // Arithmetic shift and saturation of the resolved sum.
    wire signed [ACC_W-1:0] shifted = $signed(sum) >>> shift;
    wire sign = shifted[ACC_W-1];
    wire fits = (&shifted[ACC_W-1:15]) | ~(|shifted[ACC_W-1:15]);  // bits 15 and up all equal
    wire [15:0] saturated = fits ? shifted[15:0] : (sign ? 16'h8000 : 16'h7FFF);

    always_ff @(posedge clk) begin
        if (!rst_n || clear) begin
            state     <= S_IDLE;
            k         <= '0;
            acc_s     <= '0;
            acc_c     <= '0;
            sum_lo    <= '0;
            carry_lo  <= 1'b0;
            sum       <= '0;
            out_valid <= 1'b0;
            out_data  <= 16'd0;
            for (int i = 0; i < NTAPS; i++) hist[i] <= 16'd0;
        end else begin
            if (out_valid && out_ready) out_valid <= 1'b0;
            case (state)
                S_IDLE: if (in_valid) begin
                    hist[0] <= in_data;
                    for (int i = 1; i < NTAPS; i++) hist[i] <= hist[i-1];
                    acc_s <= rnd;
                    acc_c <= '0;
                    k     <= '0;
                    state <= S_MAC;
                end
                S_MAC: begin
                    acc_s <= next_s;
                    acc_c <= next_c;
                    if (k == KW'(NTAPS - 1)) state <= S_RES_LO;
                    else k <= k + 1'b1;
                end
                S_RES_LO: begin
                    {carry_lo, sum_lo} <= {1'b0, acc_s[LO_W-1:0]} + {1'b0, acc_c[LO_W-1:0]};
                    state <= S_RES_HI;
                end
                S_RES_HI: begin
                    sum   <= {acc_s[ACC_W-1:LO_W] + acc_c[ACC_W-1:LO_W] + HI_W'(carry_lo), sum_lo};
                    state <= S_FIN;
                end
                default: if (!out_valid || out_ready) begin
                    out_data  <= saturated;
                    out_valid <= 1'b1;
                    state     <= S_IDLE;
                end
            endcase
        end
    end
endmodule
`default_nettype wire
