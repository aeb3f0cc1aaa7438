// firdma register file: AXI4-Lite slave (32-bit data, 12-bit address), configuration, status.
`default_nettype none
module firdma_regs #(
    parameter int NTAPS = 16,
    parameter int DATA_W = 32
) (
    input  wire                   clk,
    input  wire                   rst_n,
    // AXI4-Lite slave
    input  wire [11:0]            s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [31:0]            s_axil_wdata,
    input  wire [3:0]             s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output reg  [1:0]             s_axil_bresp,
    output reg                    s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [11:0]            s_axil_araddr,
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output reg  [31:0]            s_axil_rdata,
    output reg  [1:0]             s_axil_rresp,
    output reg                    s_axil_rvalid,
    input  wire                   s_axil_rready,
    // job configuration
    output reg                    start_req,   // one-cycle pulse: START written while idle
    output reg                    abort_req,   // one-cycle pulse: ABORT written while busy
    output reg  [31:0]            src_addr,
    output reg  [31:0]            dst_addr,
    output reg  [15:0]            len,
    output reg  [4:0]             shift,
    output reg  [4:0]             burst,       // 1..16 beats
    output wire [NTAPS*16-1:0]    coefs,       // COEF[k] in bits [16k+15:16k]
    // status from the job control
    input  wire                   busy,
    input  wire                   set_done,
    input  wire                   set_error,
    input  wire [3:0]             set_err_code,
    input  wire                   set_aborted,
    input  wire [31:0]            cycles,
    output wire                   irq
);
    localparam logic [31:0] ID_VALUE = 32'hF1DA_0100;  // magic F1DA, version 1.0

    localparam logic [9:0] A_ID = 10'h000, A_CTRL = 10'h001, A_STATUS = 10'h002,
                           A_SRC = 10'h003, A_DST = 10'h004, A_LEN = 10'h005,
                           A_SHIFT = 10'h006, A_BURST = 10'h007, A_CYCLES = 10'h008,
                           A_NTAPS = 10'h009;

    localparam int CIW = (NTAPS > 1) ? $clog2(NTAPS) : 1;

    reg        irq_en;
    reg        st_done, st_error, st_aborted;
    reg [3:0]  st_err_code;
    reg [15:0] coef_q [NTAPS];

    genvar g;
    generate
        for (g = 0; g < NTAPS; g++) begin : g_coef_out
            assign coefs[g*16 +: 16] = coef_q[g];
        end
    endgenerate

    // A register write or START is not accepted in the cycle START is being acted on.
    wire locked = busy | start_req;

    // ---------------- write channel: AW and W accepted together, one at a time
    wire wr_fire = s_axil_awvalid & s_axil_wvalid & ~s_axil_bvalid;
    assign s_axil_awready = wr_fire;
    assign s_axil_wready  = wr_fire;
    wire [9:0] wr_word = s_axil_awaddr[11:2];

    function automatic logic is_coef(input logic [9:0] word);
        is_coef = (word[9:6] == 4'h1) && ({1'b0, word[5:0]} < 7'(NTAPS));
    endfunction

    function automatic logic is_mapped(input logic [9:0] word);
        is_mapped = (word <= A_NTAPS) || is_coef(word);
    endfunction

    function automatic logic [4:0] clamp_burst(input logic [31:0] value);
        if (value == 32'd0) clamp_burst = 5'd1;
        else if (value > 32'd16) clamp_burst = 5'd16;
        else clamp_burst = value[4:0];
    endfunction

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            s_axil_bvalid <= 1'b0;
            s_axil_bresp  <= 2'b00;
            start_req     <= 1'b0;
            abort_req     <= 1'b0;
            irq_en        <= 1'b0;
            src_addr      <= 32'd0;
            dst_addr      <= 32'd0;
            len           <= 16'd0;
            shift         <= 5'd0;
            burst         <= 5'd16;
            st_done       <= 1'b0;
            st_error      <= 1'b0;
            st_aborted    <= 1'b0;
            st_err_code   <= 4'd0;
            for (int k = 0; k < NTAPS; k++) coef_q[k] <= 16'd0;
        end else begin
            start_req <= 1'b0;
            abort_req <= 1'b0;
            if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
            if (wr_fire) begin
                s_axil_bvalid <= 1'b1;
                s_axil_bresp  <= is_mapped(wr_word) ? 2'b00 : 2'b10;
                case (wr_word)
                    A_CTRL: begin
                        irq_en <= s_axil_wdata[2];
                        if (s_axil_wdata[0] && !locked) begin
                            start_req   <= 1'b1;
                            st_done     <= 1'b0;
                            st_error    <= 1'b0;
                            st_aborted  <= 1'b0;
                            st_err_code <= 4'd0;
                        end
                        if (s_axil_wdata[1] && busy) abort_req <= 1'b1;
                    end
                    A_STATUS: begin
                        if (s_axil_wdata[1]) st_done <= 1'b0;
                        if (s_axil_wdata[2]) begin
                            st_error    <= 1'b0;
                            st_err_code <= 4'd0;
                        end
                        if (s_axil_wdata[3]) st_aborted <= 1'b0;
                    end
                    A_SRC:   if (!locked) src_addr <= s_axil_wdata;
                    A_DST:   if (!locked) dst_addr <= s_axil_wdata;
                    A_LEN:   if (!locked) len <= s_axil_wdata[15:0];
                    A_SHIFT: if (!locked) shift <= s_axil_wdata[4:0];
                    A_BURST: if (!locked) burst <= clamp_burst(s_axil_wdata);
                    default: if (is_coef(wr_word) && !locked) coef_q[wr_word[CIW-1:0]] <= s_axil_wdata[15:0];
                endcase
            end
            // Events from the job control win over a software clear in the same cycle.
            if (set_done) st_done <= 1'b1;
            if (set_aborted) st_aborted <= 1'b1;
            if (set_error) begin
                st_error    <= 1'b1;
                st_err_code <= set_err_code;
            end
        end
    end

    // ---------------- read channel
    assign s_axil_arready = ~s_axil_rvalid;
    wire [9:0] rd_word = s_axil_araddr[11:2];

    logic [31:0] rd_value;
    always @(*) begin
        case (rd_word)
            A_ID:     rd_value = ID_VALUE;
            A_CTRL:   rd_value = {29'd0, irq_en, 2'b00};
            A_STATUS: rd_value = {20'd0, st_err_code, 4'd0, st_aborted, st_error, st_done, busy};
            A_SRC:    rd_value = src_addr;
            A_DST:    rd_value = dst_addr;
            A_LEN:    rd_value = {16'd0, len};
            A_SHIFT:  rd_value = {27'd0, shift};
            A_BURST:  rd_value = {27'd0, burst};
            A_CYCLES: rd_value = cycles;
            A_NTAPS:  rd_value = 32'(NTAPS);
            default:  rd_value = is_coef(rd_word) ? {{16{coef_q[rd_word[CIW-1:0]][15]}}, coef_q[rd_word[CIW-1:0]]}
                                                  : 32'd0;
        endcase
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            s_axil_rvalid <= 1'b0;
            s_axil_rdata  <= 32'd0;
            s_axil_rresp  <= 2'b00;
        end else begin
            if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
            if (s_axil_arvalid && !s_axil_rvalid) begin
                s_axil_rvalid <= 1'b1;
                s_axil_rdata  <= rd_value;
                s_axil_rresp  <= is_mapped(rd_word) ? 2'b00 : 2'b10;
            end
        end
    end

    assign irq = irq_en & (st_done | st_error | st_aborted);

    // Protection bits and byte strobes do not change behavior (whole-register writes).
    wire unused_ok = &{1'b0, s_axil_awprot, s_axil_arprot, s_axil_wstrb, s_axil_awaddr[1:0],
                       s_axil_araddr[1:0], s_axil_wdata[31:16], 1'(DATA_W)};
endmodule
`default_nettype wire
